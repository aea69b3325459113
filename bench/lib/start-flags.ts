/**
 * The V8 flags `npm start` gives the gateway: the ones its script puts in front of the caller's NODE_OPTIONS
 * (package.json), so that a NODE_OPTIONS of the operator's own that sets one again wins. The container sets the
 * same in its NODE_OPTIONS (docker/Dockerfile; test/unit/container.test.ts holds the two together).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * The flags a start script sets in NODE_OPTIONS (`[NAME=value …] NODE_OPTIONS="<flags> $NODE_OPTIONS" exec node …`,
 * other assignments allowed in front, as `MGW_LAUNCHED_BY=$PPID`); none without.
 */
export function flagsOfStart(script: string): string[] {
  const m = /^(?:[A-Za-z_][A-Za-z0-9_]*=[^\s"]* )*NODE_OPTIONS="([^"$]*)\$NODE_OPTIONS" exec node /.exec(script);
  return m?.[1]?.trim().split(/\s+/).filter(Boolean) ?? [];
}

/** The flags of this repository's `npm start`. */
export function startFlags(): string[] {
  const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts?: { start?: string } };
  return flagsOfStart(pkg.scripts?.start ?? '');
}
