/**
 * Keeping WhatsApp Web's page from loading what a gateway never looks at (WEBJS_BLOCK_RESOURCES): images,
 * audio/video and fonts fetched from the network. Blocked requests fail at once in the browser (as an ad
 * blocker's do); the page carries on without them.
 *
 * What stays loaded whatever is configured: documents, scripts, stylesheets, XHR/fetch (the library's media
 * download and upload), WebSockets, workers, and everything the page builds itself — the QR code (drawn on a
 * canvas), `data:` and `blob:` images (the library's sticker and thumbnail conversion). The rule is by
 * resource type, never by host: WhatsApp's media hosts also serve what the library downloads with fetch.
 *
 * How: a DevTools session of our own on the page with `Fetch.enable` for those resource types only. It sits
 * beside puppeteer's request interception (which the library turns on for its page cache) without touching
 * it; a request either of them lets through is seen by the other. It is installed from the auth strategy's
 * `afterBrowserInitialized` step, which the library awaits after creating the page and before loading
 * WhatsApp Web, so nothing is loaded before the rule is in place.
 */
import type WAWebJS from 'whatsapp-web.js';
import type { WebjsBlockable } from '../../config.js';

/** The library's page (puppeteer's Page). */
export type LibraryPage = NonNullable<WAWebJS.Client['pupPage']>;

/** The DevTools resource type of each blockable kind. */
const RESOURCE_TYPES = { image: 'Image', media: 'Media', font: 'Font' } as const satisfies Record<WebjsBlockable, string>;

/** Fail every request of the given kinds the page makes from now on. */
export async function blockResources(page: LibraryPage, kinds: readonly WebjsBlockable[]): Promise<void> {
  if (kinds.length === 0) return;
  const cdp = await page.createCDPSession();
  cdp.on('Fetch.requestPaused', (event) => {
    // the page may be closing: a request that can no longer be failed needs nothing
    cdp.send('Fetch.failRequest', { requestId: event.requestId, errorReason: 'BlockedByClient' }).catch(() => undefined);
  });
  await cdp.send('Fetch.enable', { patterns: kinds.map((kind) => ({ resourceType: RESOURCE_TYPES[kind], requestStage: 'Request' as const })) });
}

/**
 * `strategy`, changed to run `setup` on the library's page once its own `afterBrowserInitialized` is done
 * (before WhatsApp Web is loaded). The library runs that step again on the same page after a logout; the
 * setup runs once per page.
 */
export function withPageSetup<S extends WAWebJS.AuthStrategy>(strategy: S, setup: (page: LibraryPage) => Promise<void>): S {
  let client: WAWebJS.Client | null = null;
  const done = new WeakSet<LibraryPage>();
  const ownSetup = strategy.setup.bind(strategy);
  const ownAfter = strategy.afterBrowserInitialized.bind(strategy);
  strategy.setup = (c) => {
    client = c;
    ownSetup(c);
  };
  strategy.afterBrowserInitialized = async () => {
    await ownAfter();
    const page = client?.pupPage;
    if (page === undefined || done.has(page)) return;
    done.add(page);
    await setup(page);
  };
  return strategy;
}
