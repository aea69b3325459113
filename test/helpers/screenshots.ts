/**
 * Where the tests that render pages in Chromium save their screenshots: a temporary directory by default, so
 * that `npm test` leaves a clean checkout clean; docs/screenshots/ (the images the README links) only with
 * UPDATE_SCREENSHOTS=1. Either way the screenshot is taken, and a rendering that fails (or is not a PNG) fails
 * the test.
 */
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { PACKAGE_ROOT } from '../../src/package-root.js';

export const SCREENSHOT_DIR =
  process.env.UPDATE_SCREENSHOTS === '1' ? path.join(PACKAGE_ROOT, 'docs', 'screenshots') : path.join(os.tmpdir(), 'mgw-screenshots');

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Save a screenshot of `page` as `name` (e.g. `console-queue.png`) in SCREENSHOT_DIR; answers its path. */
export async function saveScreenshot(page: Page, name: string, options: { fullPage?: boolean } = {}): Promise<string> {
  const file = path.join(SCREENSHOT_DIR, name);
  await mkdir(SCREENSHOT_DIR, { recursive: true });
  const png = await page.screenshot({ path: file, ...options });
  assert.ok(png.length > PNG_SIGNATURE.length && png.subarray(0, PNG_SIGNATURE.length).equals(PNG_SIGNATURE), `the screenshot ${name} is not a PNG`);
  return file;
}
