/** The random pause of SPEC.md planner rules 2 and 4, and the sources of it the planner and the tests use. */

/**
 * A random pause in [min, max], integer milliseconds. `key` names what the pause follows (a job id, or
 * `start`); sources may ignore it, or use it to make re-plans of an unchanged queue reproduce the same slots.
 */
export type RandomDelay = (min: number, max: number, key: string) => number;

export const mathRandomDelay: RandomDelay = (min, max) => min + Math.floor(Math.random() * (max - min + 1));

/** mulberry32: a small deterministic generator, for tests and simulations. */
export function seededRandomDelay(seed: number): RandomDelay {
  let a = seed >>> 0;
  return (min, max) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    const u = ((x ^ (x >>> 14)) >>> 0) / 4294967296;
    return min + Math.floor(u * (max - min + 1));
  };
}

/**
 * Random-looking but a function of `key` and `salt` (FNV-1a): the pause after a given job is the same in every
 * re-plan, so re-planning an unchanged queue reproduces its slots and only moved jobs need an UPDATE.
 */
export function stableRandomDelay(salt = ''): RandomDelay {
  // FNV-1a runs left to right: the state after `${salt}|` is the same for every key, so it is computed once
  const h0 = fnv1a(0x811c9dc5, `${salt}|`);
  return (min, max, key) => {
    let h = fnv1a(h0, key);
    h = Math.imul(h ^ (h >>> 16), 0x45d9f3b);
    return min + (((h ^ (h >>> 16)) >>> 0) % (max - min + 1));
  };
}

function fnv1a(h: number, s: string): number {
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h;
}
