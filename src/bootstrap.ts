/**
 * First-start duties: the admin token (generated into DATA_DIR when ADMIN_TOKEN is unset, mode 0600, shown
 * once) and the data directory itself.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
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
    if (token.length >= 16) return { token, generated: false };
  } catch {
    // first start: generate below
  }
  const token = newAdminToken();
  await writeFile(file, `${token}\n`, { mode: 0o600 });
  return { token, generated: true };
}
