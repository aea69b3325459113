// How a TypeScript file of this repository becomes the JavaScript node runs: esbuild's transform with the options
// tsx uses (the same target, names kept, whitespace minified, a source map inline so stack traces name the .ts
// file and its lines), so the tests run what `npm start` runs. Used ahead of a test run for every file
// (compileAll) and by the loader's hooks for a file compiled since (compileFile).
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const TSCONFIG = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'tsconfig.json');

/** esbuild's transform options for one file (tsx's: dist/index-*.mjs; `sourcefile` names the map's source). */
function options(file, tsconfigRaw) {
  return {
    loader: 'ts',
    format: 'esm',
    target: `node${process.versions.node}`,
    sourcemap: 'inline',
    sourcesContent: false,
    sourcefile: path.basename(file),
    minifyWhitespace: true,
    keepNames: true,
    tsconfigRaw,
  };
}

let tsconfig;
function tsconfigRaw() {
  tsconfig ??= JSON.parse(readFileSync(TSCONFIG, 'utf8'));
  return tsconfig;
}

/** One file, now (esbuild's synchronous API: the loader's hooks run where an await would not help). */
export async function compileFile(file) {
  const { transformSync } = await import('esbuild');
  return transformSync(readFileSync(file, 'utf8'), options(file, tsconfigRaw())).code;
}

/**
 * Every file at once (esbuild's service transforms them in parallel): [file, JavaScript] pairs. A file that does
 * not compile is left out: loaded, it is compiled again and its process fails on the error, as under tsx, instead of
 * the whole run.
 */
export async function compileAll(files) {
  const { transform } = await import('esbuild');
  const raw = tsconfigRaw();
  const results = await Promise.allSettled(files.map(async (file) => [file, (await transform(await readFile(file, 'utf8'), options(file, raw))).code]));
  return results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
}
