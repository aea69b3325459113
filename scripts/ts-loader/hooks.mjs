// The loader's hooks (node's module.register: they run in a thread of their own). A `.js` import that names no
// file but a `.ts` beside it resolves to the `.ts`, as TypeScript's NodeNext resolution and tsx have it; a `.ts`
// module loads as the JavaScript compiled ahead into the run's cache (MGW_TS_CACHE: the source's absolute path
// + '.js'), or is compiled now when the cache has no copy or an older one than the source.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { compileFile } from './compile.mjs';

let cache = '';

export function initialize(data) {
  cache = data?.cache ?? '';
}

export async function resolve(specifier, context, next) {
  if (specifier.endsWith('.js') && context.parentURL?.startsWith('file:') && /^(\.{1,2}\/|\/|file:)/.test(specifier)) {
    const js = new URL(specifier, context.parentURL);
    if (!existsSync(js)) {
      const ts = new URL(js.href.replace(/\.js$/, '.ts'));
      if (existsSync(ts)) return { url: ts.href, format: 'module', shortCircuit: true };
    }
  }
  return next(specifier, context);
}

/** The cached JavaScript of `file`, unless the source changed after it was compiled. */
function cached(file) {
  if (cache === '') return null;
  const copy = path.join(cache, `${file}.js`);
  try {
    if (statSync(copy).mtimeMs < statSync(file).mtimeMs) return null;
    return readFileSync(copy, 'utf8');
  } catch {
    return null;
  }
}

export async function load(url, context, next) {
  if (url.startsWith('file:') && /\.ts(\?|$)/.test(url)) {
    const file = fileURLToPath(url.replace(/\?.*$/, ''));
    return { format: 'module', source: cached(file) ?? (await compileFile(file)), shortCircuit: true };
  }
  return next(url, context);
}
