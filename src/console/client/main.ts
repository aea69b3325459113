/**
 * The operator console's script (bundled by src/console/router.ts). One page: sign in with the admin token
 * (the server answers with an HttpOnly cookie; the token is not kept here), then the instances live from the
 * server-sent event stream /console/events. This file signs in and out, follows the stream and wires the page;
 * each part of the page is its own module: the instances list with its actions and the create form
 * (instances.ts), the confirmation dialog (confirm.ts), linking by QR or pairing code (link.ts), the settings
 * editor (settings.ts), and the Queue, Webhook and Diagrams panels (queue.ts, webhook.ts, diagrams.ts).
 */
import { ApiError, call, message, whenSessionEnded } from './api.js';
import { browser, byId, onSubmit, type EventSourceLike, type InputEl } from './dom.js';
import { initConfirm } from './confirm.js';
import { clearInstances, initInstances, markStale, renderInstances, showError, type InstanceItem } from './instances.js';
import { initLink } from './link.js';
import { initSettings } from './settings.js';
import { initQueue } from './queue.js';
import { initWebhook } from './webhook.js';
import { initDiagrams } from './diagrams.js';
import { closePanelsOf } from './panels.js';

let events: EventSourceLike | null = null;
/** the next try to open the event stream again after it was refused (a 5xx), or null */
let retry: number | null = null;

/** How long after a refused event stream the page tries again (the stream's own reconnection delay). */
const RETRY_MS = 2_000;

// ---- signing in and out
function showSignIn(note = ''): void {
  stopEvents();
  closePanelsOf(null);
  clearInstances();
  byId('app').hidden = true;
  byId('sign-out').hidden = true;
  byId('sign-in').hidden = false;
  byId('sign-in-error').textContent = note;
  byId('token').focus();
}

function showApp(): void {
  byId('sign-in').hidden = true;
  byId('app').hidden = false;
  byId('sign-out').hidden = false;
  showError('');
  startEvents();
}

async function checkSession(): Promise<void> {
  const { signedIn } = await call<{ signedIn: boolean }>('GET', '/console/session');
  if (signedIn) showApp();
  else showSignIn();
}

// ---- the live instances
function startEvents(): void {
  stopEvents();
  const live = byId('live');
  if (live.className !== 'stale') live.textContent = 'connecting…';
  const es = new browser.EventSource('/console/events');
  events = es;
  es.addEventListener('instances', (ev) => {
    live.className = 'muted';
    live.textContent = 'live';
    const snapshot = JSON.parse(ev.data) as { at: string; items: InstanceItem[] };
    renderInstances(snapshot.items, snapshot.at);
  });
  // the poll failed on the gateway (it could not read the instances): the list is stale until one succeeds
  es.addEventListener('problem', () => stale('the gateway could not read the instances'));
  es.addEventListener('signed-out', () => showSignIn('You were signed out.'));
  es.onerror = () => {
    if (es.readyState !== browser.EventSource.CLOSED) {
      // the browser reconnects by itself
      stale('the gateway cannot be reached');
      return;
    }
    // a refusal (a 5xx, or the session expired) closes the stream for good: ask whether we are still signed in,
    // and open it again (after a pause) while we are
    stale('the gateway refused the event stream');
    es.close();
    if (events === es) events = null;
    again();
  };
}

/** The list is not current: say so and why, until the next reading (markStale); the live mark says "stale". */
function stale(reason: string): void {
  const live = byId('live');
  live.className = 'stale';
  live.textContent = 'stale';
  markStale(reason);
}

/** Why a call to the gateway failed, briefly, for the stale mark: its status, or that it cannot be reached. */
const unreachable = (err: unknown): string =>
  err instanceof ApiError ? `the gateway answered ${err.status}` : 'the gateway cannot be reached';

/** After a refused stream: in RETRY_MS, the session checked and the stream opened again (or the sign-in shown). */
function again(): void {
  if (retry !== null) browser.clearTimeout(retry);
  retry = browser.setTimeout(() => {
    retry = null;
    checkSession().catch((err: unknown) => {
      stale(unreachable(err));
      again();
    });
  }, RETRY_MS);
}

function stopEvents(): void {
  if (retry !== null) browser.clearTimeout(retry);
  retry = null;
  events?.close();
  events = null;
}

// ---- wiring the page
function init(): void {
  initConfirm();

  onSubmit('sign-in-form', async () => {
    const input = byId<InputEl>('token');
    try {
      await call('POST', '/console/session', { token: input.value });
      input.value = '';
      showApp();
    } catch (err) {
      byId('sign-in-error').textContent = err instanceof ApiError && err.status === 401 ? 'That is not the admin token.' : message(err);
    }
  });

  byId('sign-out').addEventListener('click', () => {
    // answered 200 whether the session was still valid or not (the cookie is cleared either way)
    void call('DELETE', '/console/session')
      .then(() => showSignIn('Signed out.'))
      .catch((err: unknown) => showError(`Sign out: ${message(err)}`));
  });
  whenSessionEnded((reason) => {
    if (!byId('app').hidden) showSignIn(reason);
  });

  initInstances();
  initLink();
  initSettings();
  initQueue();
  initWebhook();
  initDiagrams();

  void checkSession().catch((err: unknown) => showSignIn(message(err)));
}

init();
