/**
 * First-start duties: the admin token (generated into DATA_DIR when ADMIN_TOKEN is unset, mode 0600, shown
 * once) and the data directory itself.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { BEARER_TOKEN_RULE, BEARER_TOKEN_TEXT } from './config.js';
import { newAdminToken } from './ids.js';

export async function ensureDataDir(dataDir: string): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
}

/** The admin token and whether this call generated it (then, and only then, it is shown to the operator). */
export async function resolveAdminToken(dataDir: string, fromEnv: string | undefined): Promise<{ token: string; generated: boolean }> {
  if (fromEnv) return { token: fromEnv, generated: false };
  const file = path.join(dataDir, 'admin-token');
  try {
    const token = (await readFile(file, 'utf8')).trim();
    if (BEARER_TOKEN_RULE.test(token)) return { token, generated: false };
    // written by hand with characters a bearer token cannot hold: it could never be used (never overwritten)
    if (token.length >= 16) throw new Error(`the admin token in ${file} ${BEARER_TOKEN_TEXT}; correct it, or delete the file to have one generated`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    // first start: generate below
  }
  const token = newAdminToken();
  await writeFile(file, `${token}\n`, { mode: 0o600 });
  return { token, generated: true };
}
