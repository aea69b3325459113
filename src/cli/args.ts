/**
 * The argument grammar of `mgw`: each verb names its positional arguments and flags; a verb's `--help` prints
 * its usage, a missing argument or a bad flag is a usage error (exit 2, one line naming what is wrong).
 */

export class UsageError extends Error {}

export interface VerbSpec {
  /** the words that select the verb, e.g. `webhook show` */
  name: string;
  /** positional arguments; a trailing `?` marks an optional one */
  args: string[];
  /** flags: `value` takes the next word (`--port 3100` or `--port=3100`), `bool` stands alone */
  flags: Record<string, 'value' | 'bool'>;
  /** how the flags read in the usage line, e.g. `[--port N]` */
  flagsUsage?: string;
  summary: string;
}

export interface Parsed {
  args: Record<string, string | undefined>;
  flags: Record<string, string | true | undefined>;
  help: boolean;
}

/** A verb with what it does once its arguments are parsed. */
export interface Verb extends VerbSpec {
  run(p: Parsed): Promise<void>;
}

/** Every verb takes these. */
const COMMON: Record<string, 'value' | 'bool'> = { help: 'bool', h: 'bool', json: 'bool' };

export const usageLine = (v: VerbSpec): string =>
  ['mgw', v.name, ...v.args.map((a) => (a.endsWith('?') ? `[${a.slice(0, -1)}]` : `<${a}>`)), ...(v.flagsUsage ? [v.flagsUsage] : [])].join(' ');

export function parseArgs(spec: VerbSpec, words: string[]): Parsed {
  const flags: Record<string, string | true | undefined> = {};
  const positional: string[] = [];
  const known = { ...COMMON, ...spec.flags };
  for (let i = 0; i < words.length; i++) {
    const w = words[i] ?? '';
    if (w === '--') {
      positional.push(...words.slice(i + 1));
      break;
    }
    // `--name` or `-n` (one letter); any other word that starts like an option is one the verb does not know
    // (found from the outside: `--allowPrivate` and `--allow_private` went through as a positional argument, the
    // webhook's events, and `-json` was taken for `--json`)
    const m = /^(?:--([a-z][a-z-]*)|-([a-z]))(?:=(.*))?$/.exec(w);
    if (!m) {
      if (/^--?[A-Za-z_]/.test(w)) throw new UsageError(`mgw ${spec.name}: unknown option ${w} (usage: ${usageLine(spec)})`);
      positional.push(w);
      continue;
    }
    const name = m[1] ?? m[2] ?? '';
    const given = m[3];
    const kind = known[name];
    if (kind === undefined) throw new UsageError(`mgw ${spec.name}: unknown option ${w} (usage: ${usageLine(spec)})`);
    if (kind === 'bool') {
      if (given !== undefined) throw new UsageError(`mgw ${spec.name}: --${name} takes no value`);
      flags[name] = true;
      continue;
    }
    const value = given ?? words[++i];
    if (value === undefined || (given === undefined && value.startsWith('--'))) {
      throw new UsageError(`mgw ${spec.name}: --${name} needs a value (usage: ${usageLine(spec)})`);
    }
    flags[name] = value;
  }
  const help = flags.help === true || flags.h === true;
  const args: Record<string, string | undefined> = {};
  const missing: string[] = [];
  spec.args.forEach((a, i) => {
    const optional = a.endsWith('?');
    const key = optional ? a.slice(0, -1) : a;
    const value = positional[i];
    if (value === undefined || value === '') {
      if (!optional) missing.push(`<${key}>`);
    } else args[key] = value;
  });
  if (help) return { args, flags, help };
  if (missing.length) throw new UsageError(`mgw ${spec.name}: missing ${missing.join(' and ')} (usage: ${usageLine(spec)})`);
  if (positional.length > spec.args.length) {
    throw new UsageError(`mgw ${spec.name}: unexpected argument '${positional[spec.args.length] ?? ''}' (usage: ${usageLine(spec)})`);
  }
  return { args, flags, help };
}

/** A plain-text table: one header row, columns padded to the widest cell; cells are single-line. */
export function table(headers: string[], rows: (string | number | boolean | null | undefined)[][]): string {
  const cells = rows.map((r) => r.map((c) => (c === null || c === undefined || c === '' ? '-' : String(c).replace(/\s+/g, ' '))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ').trimEnd();
  return [line(headers), ...cells.map(line)].join('\n') + '\n';
}
