/**
 * The package's root folder: the one holding package.json and sql/. Files read at run time by path (the
 * migrations, the version) are found from here, so the same code works run through tsx from src/ and compiled
 * into dist/src/ (where "two folders up from this file" is dist/, which holds neither).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The nearest folder at or above `from` that holds a package.json. */
export function findPackageRoot(from: string): string {
  let dir = path.resolve(from);
  for (;;) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json at or above ${from}`);
    dir = parent;
  }
}

export const PACKAGE_ROOT: string = findPackageRoot(path.dirname(fileURLToPath(import.meta.url)));
