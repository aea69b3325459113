/**
 * The Chromium the browser tests drive: Debian's (`.ci/run` installs it) or the one CHROME_PATH names. Without it
 * those tests skip and say where they looked, so `npm test` on a machine without a browser still passes.
 */
import { existsSync } from 'node:fs';

export const CHROME = process.env.CHROME_PATH || '/usr/bin/chromium';
/** Why a browser test skips on this machine, or null when Chromium is there. */
export const NO_CHROME = existsSync(CHROME) ? null : `no Chromium at ${CHROME} (apt-get install -y chromium, or set CHROME_PATH)`;
/** The option of a test that needs Chromium. */
export const NEEDS_CHROME = { skip: NO_CHROME ?? false };
