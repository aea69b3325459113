/**
 * What the webjs driver does to its browser and page, on a real Chromium without network
 * (CI installs `chromium`; without it every test here says why it skips):
 *   - the switches reach the browser (puppeteer merges our `--disable-features` with its own and with
 *     WEBJS_CHROME_ARGS), and the processes they remove are gone (no address-bar WebUI renderer, no spare
 *     renderer);
 *   - WEBJS_BLOCK_RESOURCES keeps images, media and fonts of the page from loading, and nothing else: scripts,
 *     fetch (how the library downloads media), `data:`/`blob:` images (its sticker conversion) and canvas
 *     drawing (the QR code) still work; without it everything loads;
 *   - on Chromium and on chrome-headless-shell (when installed), what the page stores in IndexedDB and
 *     localStorage (where WhatsApp Web keeps its link) is there again at the next start of the profile.
 * WhatsApp Web is replaced by a stand-in page served through the library's own web-version cache (as in
 * webjs-chromium.test.ts). The page loads its resources from a local HTTP server, which records what reached
 * it, and reports what it could do to that server.
 */
import { after, before, describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Clock } from '../../src/clock.js';
import type { WebjsBlockable } from '../../src/config.js';
import { WebjsDriver } from '../../src/drivers/webjs/driver.js';
import { pidsWithUserDataDir, processTree } from '../../src/drivers/webjs/processes.js';
import { CHROME, NO_CHROME } from '../helpers/chromium.js';

const SHELL = process.env.CHROME_HEADLESS_SHELL_PATH || '/usr/lib/chromium/chromium-headless-shell';
const NO_SHELL = existsSync(SHELL) ? null : `no chrome-headless-shell at ${SHELL} (apt-get install -y chromium-headless-shell)`;
const VERSION = 'page-test';
// A 1×1 PNG.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==', 'base64');

const root = mkdtempSync(path.join(tmpdir(), 'webjs-page-'));
const realClock: Clock = { now: () => Date.now(), setTimeout: (fn, ms) => setTimeout(fn, ms), clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout) };

interface Report {
  imgLoaded: boolean;
  dataImage: number;
  blobImage: number;
  fetchedBytes: number;
  pixel: number[];
  /** What an earlier start of the same profile stored (IndexedDB and localStorage, where WhatsApp Web keeps its link). */
  stored: { idb: string | null; ls: string | null };
}

/** The local server: what reached it, per test (a query tag tells the tests apart), and the page's reports. */
let server: Server;
let base = '';
const hits = new Map<string, string[]>();
const reports = new Map<string, (r: Report) => void>();

before(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const tag = url.searchParams.get('t') ?? '';
    hits.set(tag, [...(hits.get(tag) ?? []), url.pathname]);
    res.setHeader('access-control-allow-origin', '*');
    if (url.pathname === '/report') {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        res.end();
        reports.get(tag)?.(JSON.parse(body) as Report);
      });
      return;
    }
    if (url.pathname.endsWith('.png')) res.setHeader('content-type', 'image/png');
    if (url.pathname === '/script.js') res.setHeader('content-type', 'text/javascript');
    res.end(url.pathname.endsWith('.png') ? PNG : url.pathname === '/script.js' ? pageScript(tag) : '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  assert.ok(address && typeof address === 'object');
  base = `http://127.0.0.1:${address.port}`;
});
after(async () => {
  await new Promise((resolve) => server?.close(resolve));
  rmSync(root, { recursive: true, force: true });
});

/** What the stand-in page checks once loaded, reported back to the server. */
function pageScript(tag: string): string {
  return `(async () => {
  const q = '?t=${tag}';
  const load = (src) => new Promise((res) => { const i = new Image(); i.onload = () => res(i.width); i.onerror = () => res(0); i.src = src; });
  const img = document.getElementById('img');
  if (!img.complete) await new Promise((r) => { img.onload = r; img.onerror = r; });
  const canvas = document.createElement('canvas');
  canvas.width = 4; canvas.height = 4;
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = '#000'; ctx.fillRect(0, 0, 2, 2);
  const fetched = await (await fetch('${base}/fetched.png' + q)).blob();
  const db = await new Promise((res, rej) => { const o = indexedDB.open('standin', 1); o.onupgradeneeded = () => o.result.createObjectStore('s'); o.onsuccess = () => res(o.result); o.onerror = () => rej(o.error); });
  const idb = await new Promise((res) => { const g = db.transaction('s').objectStore('s').get('link'); g.onsuccess = () => res(g.result ?? null); });
  await new Promise((res) => { const tx = db.transaction('s', 'readwrite'); tx.objectStore('s').put('kept', 'link'); tx.oncomplete = res; });
  const ls = localStorage.getItem('link');
  localStorage.setItem('link', 'kept');
  // the font's and the video's requests settled (loaded, refused or blocked) before the report, so that what
  // reached the server is all there will be: its request comes before the answer the page waits for
  await document.fonts.load('1em Stand').catch(() => undefined);
  const video = document.querySelector('video');
  if (!video.error && video.readyState === 0) {
    await new Promise((r) => { for (const e of ['error', 'loadedmetadata', 'loadeddata']) video.addEventListener(e, r, { once: true }); });
  }
  const report = {
    stored: { idb, ls },
    imgLoaded: img.naturalWidth > 0,
    dataImage: await load('data:image/png;base64,${PNG.toString('base64')}'),
    blobImage: await load(URL.createObjectURL(fetched)),
    fetchedBytes: fetched.size,
    pixel: Array.from(ctx.getImageData(0, 0, 1, 1).data),
  };
  await fetch('${base}/report' + q, { method: 'POST', body: JSON.stringify(report) });
})();`;
}

/** A data directory whose page cache serves the stand-in page (resources from the local server, tagged). */
function dataDir(tag: string): string {
  const dir = path.join(root, tag);
  mkdirSync(path.join(dir, 'wwebjs-cache'), { recursive: true });
  const q = `?t=${tag}`;
  writeFileSync(
    path.join(dir, 'wwebjs-cache', `${VERSION}.html`),
    `<!doctype html><title>stand-in</title>
<style>@font-face { font-family: Stand; src: url(${base}/font.woff2${q}); } p { font-family: Stand; }</style>
<p>not WhatsApp Web</p>
<img id="img" src="${base}/img.png${q}">
<video src="${base}/clip.mp4${q}" preload="auto" muted></video>
<script src="${base}/script.js${q}"></script>`,
  );
  return dir;
}

interface Run {
  driver: WebjsDriver;
  report: Report;
  hits: string[];
}

/**
 * The stand-in page is https://web.whatsapp.com/ (a public origin to Chromium) and the server is on loopback:
 * Chromium's Local Network Access checks would refuse every request to it, so the tests turn them off (through
 * WEBJS_CHROME_ARGS, which is what the switches test checks the merge with). WhatsApp Web itself never loads
 * from the local network.
 */
const REACH_LOCAL_SERVER = '--disable-features=LocalNetworkAccessChecks';

/** Start a driver on the stand-in page and wait for its report; the caller destroys the driver. */
async function runPage(tag: string, opts: { blockResources?: WebjsBlockable[]; chromePath?: string }): Promise<Run> {
  const reported = new Promise<Report>((resolve, reject) => {
    reports.set(tag, resolve);
    setTimeout(() => reject(new Error(`no report from the page (${tag}); requests seen: ${(hits.get(tag) ?? []).join(' ')}`)), 40_000).unref();
  });
  const driver = new WebjsDriver({
    instanceId: `page-${tag}`,
    dataDir: dataDir(tag),
    callTimeoutMs: 5_000,
    chromePath: CHROME,
    clock: realClock,
    webVersion: VERSION,
    authTimeoutMs: 60_000,
    startTimeoutMs: 60_000,
    closeTimeoutMs: 3_000,
    chromeArgs: [REACH_LOCAL_SERVER],
    // LocalAuth, as in production; the stand-in page never becomes WhatsApp Web, so initialize() waits
    ...opts,
  });
  void driver.initialize().catch(() => undefined);
  try {
    const report = await reported;
    return { driver, report, hits: hits.get(tag) ?? [] };
  } catch (err) {
    await driver.destroy();
    throw err;
  }
}

function skipWithoutChrome(t: TestContext, missing: string | null = NO_CHROME): boolean {
  if (missing) t.skip(missing);
  return missing !== null;
}

/** A process's arguments (Chromium rewrites its children's command lines into one space-separated string). */
const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim().split(/ +/);

describe('webjs page on a real Chromium, no network', { timeout: 120_000 }, () => {
  test('the switches: merged into one --disable-features with WEBJS_CHROME_ARGS; no address-bar WebUI, no spare renderer', async (t) => {
    if (skipWithoutChrome(t)) return;
    const { driver, report, hits: seen } = await runPage('switches', {});
    try {
      const leader = pidsWithUserDataDir(driver.paths.userDataDir).find((pid) => !cmdline(pid).some((a) => a.startsWith('--type=')));
      assert.ok(leader, 'the browser process');
      const args = cmdline(leader);
      assert.ok(args.includes('--disable-software-rasterizer'));
      const disabled = args.filter((a) => a.startsWith('--disable-features='));
      assert.equal(disabled.length, 1, 'one list: Chromium reads only one');
      const features = (disabled[0] ?? '').slice('--disable-features='.length).split(',');
      for (const f of ['WebUIOmniboxPopup', 'WebUIOmniboxAimPopup', 'SpareRendererForSitePerProcess', 'LocalNetworkAccessChecks']) assert.ok(features.includes(f), f);

      const renderers = processTree(leader).filter((pid) => cmdline(pid).includes('--type=renderer'));
      assert.equal(renderers.filter((pid) => cmdline(pid).includes('--top-chrome-webui')).length, 0, 'no browser-UI renderer');
      assert.equal(renderers.length, 1, 'the page\'s renderer only (no spare)');

      // with nothing blocked, everything loads
      assert.equal(report.imgLoaded, true);
      for (const p of ['/img.png', '/font.woff2', '/clip.mp4', '/script.js', '/fetched.png']) assert.ok(seen.includes(p), `${p} requested (${seen.join(' ')})`);
    } finally {
      await driver.destroy();
    }
  });

  test('WEBJS_BLOCK_RESOURCES=image,media,font: those never leave the browser; scripts, fetch, data:/blob: images and canvas work', async (t) => {
    if (skipWithoutChrome(t)) return;
    const { driver, report, hits: seen } = await runPage('blocked', { blockResources: ['image', 'media', 'font'] });
    try {
      for (const p of ['/img.png', '/font.woff2', '/clip.mp4']) assert.ok(!seen.includes(p), `${p} was blocked (${seen.join(' ')})`);
      for (const p of ['/script.js', '/fetched.png', '/report']) assert.ok(seen.includes(p), `${p} went through`);
      assert.deepEqual(report, {
        stored: { idb: null, ls: null },
        imgLoaded: false,
        dataImage: 1,
        blobImage: 1,
        fetchedBytes: PNG.length,
        pixel: [0, 0, 0, 255],
      });
    } finally {
      await driver.destroy();
    }
  });

  test('WEBJS_BLOCK_RESOURCES=font: only fonts are kept out', async (t) => {
    if (skipWithoutChrome(t)) return;
    const { driver, report, hits: seen } = await runPage('fonts', { blockResources: ['font'] });
    try {
      assert.ok(!seen.includes('/font.woff2'), `the font was blocked (${seen.join(' ')})`);
      for (const p of ['/img.png', '/clip.mp4']) assert.ok(seen.includes(p), `${p} went through`);
      assert.equal(report.imgLoaded, true);
    } finally {
      await driver.destroy();
    }
  });
});

for (const [name, chrome, missing] of [
  ['Chromium', CHROME, NO_CHROME],
  ['chrome-headless-shell', SHELL, NO_SHELL],
] as const) {
  test(`${name}: what the page stored is there at the next start of the profile (the LocalAuth link)`, { timeout: 120_000 }, async (t) => {
    if (skipWithoutChrome(t, missing)) return;
    const tag = `restart-${name}`;
    const first = await runPage(tag, { chromePath: chrome });
    assert.deepEqual(first.report.stored, { idb: null, ls: null }, 'a new profile');
    await first.driver.destroy();
    const second = await runPage(tag, { chromePath: chrome });
    try {
      assert.equal(second.driver.paths.userDataDir, first.driver.paths.userDataDir);
      assert.deepEqual(second.report.stored, { idb: 'kept', ls: 'kept' });
    } finally {
      await second.driver.destroy();
    }
  });
}
