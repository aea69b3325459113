/**
 * Just enough of a Dockerfile reader for tests that hold the image to what it promises without Docker:
 * instructions (continuation lines joined, comments dropped) grouped by build stage, exec-form (JSON) arguments,
 * ENV pairs, and COPY's flags and paths.
 */
import { readFileSync } from 'node:fs';

export interface Instruction {
  keyword: string;
  /** the text after the keyword */
  args: string;
  line: number;
}

export interface Stage {
  /** the `FROM` image */
  image: string;
  name: string | null;
  instructions: Instruction[];
}

export interface Copy {
  flags: Record<string, string>;
  sources: string[];
  dest: string;
}

export function readDockerfile(file: string): Stage[] {
  const stages: Stage[] = [];
  const lines = readFileSync(file, 'utf8').split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let text = lines[i] ?? '';
    if (/^\s*(#|$)/.test(text)) continue;
    while (/\\\s*$/.test(text) && i + 1 < lines.length) {
      i += 1;
      const next = lines[i] ?? '';
      if (/^\s*#/.test(next)) continue; // a comment inside a continued instruction is dropped, as Docker does
      text = `${text.replace(/\\\s*$/, '')} ${next.trim()}`;
    }
    const m = /^\s*([A-Za-z]+)\s+([\s\S]*)$/.exec(text);
    if (!m?.[1] || m[2] === undefined) throw new Error(`${file}:${start + 1}: not an instruction: ${text}`);
    const ins: Instruction = { keyword: m[1].toUpperCase(), args: m[2].trim(), line: start + 1 };
    if (ins.keyword === 'FROM') {
      const from = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args.replace(/^--platform=\S+\s+/, ''));
      if (!from?.[1]) throw new Error(`${file}:${ins.line}: FROM without an image`);
      stages.push({ image: from[1], name: from[2] ?? null, instructions: [] });
    } else {
      const stage = stages[stages.length - 1];
      if (!stage) throw new Error(`${file}:${ins.line}: ${ins.keyword} before FROM`);
      stage.instructions.push(ins);
    }
  }
  return stages;
}

export function all(stage: Stage, keyword: string): Instruction[] {
  return stage.instructions.filter((i) => i.keyword === keyword);
}

/** The instruction in effect: the last of its kind in the stage. */
export function last(stage: Stage, keyword: string): Instruction | undefined {
  return all(stage, keyword).pop();
}

/** Exec form (`["node", "x.js"]`) as argv; shell form is refused (it would need a shell and forward no signal). */
export function execForm(args: string): string[] {
  const parsed: unknown = JSON.parse(args);
  if (!Array.isArray(parsed) || !parsed.every((a): a is string => typeof a === 'string')) throw new Error(`not exec form: ${args}`);
  return parsed;
}

/** Leading `--name=value` flags and the rest. */
export function flagsOf(args: string): { flags: Record<string, string>; rest: string } {
  const flags: Record<string, string> = {};
  let rest = args;
  for (let m = /^--([a-z-]+)=(\S+)\s+/.exec(rest); m?.[1] && m[2] !== undefined; m = /^--([a-z-]+)=(\S+)\s+/.exec(rest)) {
    flags[m[1]] = m[2];
    rest = rest.slice(m[0].length);
  }
  return { flags, rest };
}

/** The stage's ENV, in order (`K=V` pairs, double-quoted values allowed). */
export function envOf(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const ins of all(stage, 'ENV')) {
    for (const m of ins.args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S*)/g)) {
      const [, key, raw = ''] = m;
      if (key) env[key] = raw.startsWith('"') ? (JSON.parse(raw) as string) : raw;
    }
  }
  return env;
}

export function copiesOf(stage: Stage): Copy[] {
  return all(stage, 'COPY').map((ins) => {
    const { flags, rest } = flagsOf(ins.args);
    const paths = rest.startsWith('[') ? execForm(rest) : rest.split(/\s+/);
    const dest = paths.pop();
    if (!dest || paths.length === 0) throw new Error(`COPY needs a source and a destination (line ${ins.line})`);
    return { flags, sources: paths, dest };
  });
}
