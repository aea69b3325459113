/**
 * The operator console's script (bundled by src/console/router.ts). One page: sign in with the admin token
 * (the server answers with an HttpOnly cookie; the token is not kept here), then the instances live from the
 * server-sent event stream /console/events. This file signs in and out, follows the stream and wires the page;
 * each part of the page is its own module: the instances list with its actions and the create form
 * (instances.ts), the confirmation dialog (confirm.ts), linking by QR or pairing code (link.ts), the settings
 * editor (settings.ts), and the Queue, Webhook and Diagrams panels (queue.ts, webhook.ts, diagrams.ts).
 */
import { ApiError, call, message } from './api.js';
import { browser, byId, onSubmit, type EventSourceLike, type InputEl } from './dom.js';
import { initConfirm } from './confirm.js';
import { clearInstances, initInstances, renderInstances, showError, type InstanceItem } from './instances.js';
import { initLink } from './link.js';
import { initSettings } from './settings.js';
import { initQueue } from './queue.js';
import { initWebhook } from './webhook.js';
import { initDiagrams } from './diagrams.js';
import { closePanelsOf } from './panels.js';

let events: EventSourceLike | null = null;

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
  live.textContent = 'connecting…';
  const es = new browser.EventSource('/console/events');
  events = es;
  es.addEventListener('instances', (ev) => {
    live.textContent = 'live';
    renderInstances((JSON.parse(ev.data) as { items: InstanceItem[] }).items);
  });
  es.addEventListener('problem', (ev) => showError((JSON.parse(ev.data) as { message: string }).message));
  es.addEventListener('signed-out', () => showSignIn('You were signed out.'));
  es.onerror = () => {
    live.textContent = 'reconnecting…';
    // a refusal (the session expired) closes the stream for good: ask whether we are still signed in
    if (es.readyState === browser.EventSource.CLOSED) void checkSession().catch((err: unknown) => showError(message(err)));
  };
}

function stopEvents(): void {
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
    void call('DELETE', '/console/session')
      .then(() => showSignIn('Signed out.'))
      // 401: the session had ended already
      .catch((err: unknown) => (err instanceof ApiError && err.status === 401 ? showSignIn('Signed out.') : showError(message(err))));
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
