/**
 * The operator console's script (bundled by src/console/router.ts). One page: sign in with the admin token
 * (the server answers with an HttpOnly cookie; the token is not kept here), the instances live from the
 * server-sent event stream /console/events, create (the key shown once), restart, logout and delete behind a
 * confirmation, key rotation (the new key shown once), a settings editor that shows the server's validation
 * messages, and linking: the QR as an image refreshed every 2 s, or a pairing code. The Queue, Webhook and
 * Diagrams panels of an instance are their own modules (queue.ts, webhook.ts, diagrams.ts).
 */
import { ApiError, call, message } from './api.js';
import { browser, button, byId, h, type DialogEl, type El, type EventSourceLike, type ImgEl, type InputEl } from './dom.js';
import { closeQueue, initQueue, openQueue, queueTarget } from './queue.js';
import { closeWebhook, initWebhook, openWebhook, webhookTarget } from './webhook.js';
import { closeDiagrams, diagramsTarget, initDiagrams, openDiagrams } from './diagrams.js';

interface QueueCounts {
  queued?: number;
  scheduled?: number;
  sending?: number;
  sent?: number;
  failed?: number;
  unknown?: number;
}
interface InstanceItem {
  id: string;
  name: string;
  driver: string;
  status: string;
  state?: string;
  phoneNumber?: string | null;
  connected?: boolean;
  lastError?: string | null;
  settings?: Record<string, unknown>;
  queue: QueueCounts | null;
}
interface Row {
  tr: El;
  status: El;
  detail: El;
  phone: El;
  driver: El;
  queue: El;
  link: El;
  item: InstanceItem;
}

const REFRESH_MS = 2_000;
const rows = new Map<string, Row>();
let events: EventSourceLike | null = null;
let linkId: string | null = null;
let settingsId: string | null = null;
let linkTimer: number | null = null;
let shownQr = '';

function showError(text: string): void {
  byId('app-error').textContent = text;
}

// ---- confirmation dialog
let answer: ((ok: boolean) => void) | null = null;
function confirmAction(text: string): Promise<boolean> {
  const dialog = byId<DialogEl>('confirm');
  byId('confirm-text').textContent = text;
  dialog.returnValue = '';
  dialog.showModal();
  return new Promise((resolve) => {
    answer = resolve;
  });
}

// ---- signing in and out
function showSignIn(note = ''): void {
  stopEvents();
  closeLink();
  closeSettings();
  closePanelsOf(null);
  for (const row of rows.values()) row.tr.remove();
  rows.clear();
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
    render((JSON.parse(ev.data) as { items: InstanceItem[] }).items);
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

function queueText(q: QueueCounts | null): string {
  if (!q) return '—';
  return `queued ${(q.queued ?? 0) + (q.scheduled ?? 0)} · sending ${q.sending ?? 0} · sent ${q.sent ?? 0} · failed ${q.failed ?? 0}`;
}

function createRow(item: InstanceItem): Row {
  const status = h('span', 'status');
  const detail = h('small', 'detail muted');
  const [phone, driver, queue] = [h('td'), h('td'), h('td', 'queue')];
  const link = button('Link', '', () => openLink(row.item.id, row.item.name));
  const act = (verb: string, question: string, run: () => Promise<unknown>) =>
    button(verb, verb === 'Delete' ? 'danger' : '', () => {
      void (async () => {
        if (!(await confirmAction(question))) return;
        try {
          await run();
          showError('');
        } catch (err) {
          showError(`${verb} ${row.item.name}: ${message(err)}`);
        }
      })();
    });
  const base = () => `/admin/v1/instances/${encodeURIComponent(row.item.id)}`;
  const tr = h(
    'tr',
    '',
    h('td', 'name', item.name),
    h('td', '', status, detail),
    phone,
    driver,
    queue,
    h(
      'td',
      'actions',
      link,
      button('Settings', '', () => openSettings(row.item)),
      button('Queue', '', () => openQueue(row.item)),
      button('Webhook', '', () => openWebhook(row.item)),
      button('Diagrams', '', () => openDiagrams(row.item)),
      act('Rotate key', `Rotate the key of ${item.name}? The current key stops working at once.`, async () => {
        const { apiKey } = await call<{ apiKey: string }>('POST', `${base()}/keys`);
        showKey(row.item.name, apiKey);
      }),
      act('Restart', `Restart ${item.name}? Its session restarts; queued messages wait.`, () => call('POST', `${base()}/restart`)),
      act('Logout', `Log ${item.name} out? The phone must be linked again.`, () => call('POST', `${base()}/logout`)),
      act('Delete', `Delete ${item.name}? Its queue, key and session are removed for good.`, async () => {
        await call('DELETE', base());
        if (linkId === row.item.id) closeLink();
        if (settingsId === row.item.id) closeSettings();
        closePanelsOf(row.item.id);
      }),
    ),
  );
  tr.setAttribute('data-id', item.id);
  tr.setAttribute('data-name', item.name);
  const row: Row = { tr, status, detail, phone, driver, queue, link, item };
  return row;
}

function render(items: InstanceItem[]): void {
  const tbody = byId('instances-body');
  const seen = new Set<string>();
  for (const item of items) {
    seen.add(item.id);
    let row = rows.get(item.id);
    if (!row) {
      row = createRow(item);
      rows.set(item.id, row);
      tbody.append(row.tr);
    }
    row.item = item;
    row.tr.setAttribute('data-status', item.status);
    row.status.className = `status ${item.status}`;
    row.status.textContent = item.status;
    // the machine's state for operators, and the last error when there is one
    row.detail.textContent = [item.state && item.state !== item.status ? item.state : '', item.lastError ?? ''].filter(Boolean).join(' · ');
    row.phone.textContent = item.phoneNumber ? `+${item.phoneNumber}` : '—';
    row.driver.textContent = item.driver;
    row.queue.textContent = queueText(item.queue);
    row.link.hidden = item.connected === true;
    if (linkId === item.id) linkFromList(item);
  }
  for (const [id, row] of rows) {
    if (seen.has(id)) continue;
    row.tr.remove();
    rows.delete(id);
    if (linkId === id) closeLink();
    if (settingsId === id) closeSettings();
    closePanelsOf(id);
  }
  byId('empty').hidden = rows.size > 0;
}

/** Close the queue, webhook and diagram panels of an instance (null: of any). */
function closePanelsOf(id: string | null): void {
  if (id === null || queueTarget() === id) closeQueue();
  if (id === null || webhookTarget() === id) closeWebhook();
  if (id === null || diagramsTarget() === id) closeDiagrams();
}

function showKey(name: string, apiKey: string): void {
  byId('new-key-name').textContent = name;
  byId('new-key-value').textContent = apiKey;
  byId('new-key').hidden = false;
}

// ---- settings: edited as JSON, checked by the server (its messages shown as they are)
function openSettings(item: InstanceItem): void {
  settingsId = item.id;
  byId('settings').hidden = false;
  byId('settings-name').textContent = item.name;
  byId<InputEl>('settings-json').value = JSON.stringify(item.settings ?? {}, null, 2);
  byId('settings-error').textContent = '';
  byId('settings-saved').textContent = '';
}

function closeSettings(): void {
  settingsId = null;
  byId('settings').hidden = true;
}

async function saveSettings(): Promise<void> {
  const id = settingsId;
  if (id === null) return;
  const error = byId('settings-error');
  const saved = byId('settings-saved');
  error.textContent = '';
  saved.textContent = '';
  let settings: unknown;
  try {
    settings = JSON.parse(byId<InputEl>('settings-json').value);
  } catch (err) {
    error.textContent = `Not JSON: ${message(err)}`;
    return;
  }
  try {
    const updated = await call<InstanceItem>('PATCH', `/admin/v1/instances/${encodeURIComponent(id)}`, { settings });
    if (settingsId !== id) return;
    byId<InputEl>('settings-json').value = JSON.stringify(updated.settings ?? {}, null, 2);
    saved.textContent = 'Saved.';
  } catch (err) {
    // the server's message, with the field it names when the message does not start with it
    if (settingsId === id) error.textContent = err instanceof ApiError && err.field && !err.message.startsWith(err.field) ? `${err.field}: ${err.message}` : message(err);
  }
}

// ---- linking: QR and pairing code
function openLink(id: string, name: string): void {
  closeLink();
  linkId = id;
  byId('link').hidden = false;
  byId('link-name').textContent = name;
  byId('pair-code').textContent = '';
  byId('link-status').textContent = 'Reading the QR…';
  void refreshQr();
  linkTimer = browser.setInterval(() => void refreshQr(), REFRESH_MS);
}

function closeLink(): void {
  if (linkTimer !== null) browser.clearInterval(linkTimer);
  linkTimer = null;
  linkId = null;
  shownQr = '';
  const qr = byId<ImgEl>('qr');
  qr.hidden = true;
  qr.src = '';
  byId('link').hidden = true;
}

/** The list says the instance being linked is now connected: stop showing its QR. */
function linkFromList(item: InstanceItem): void {
  if (!item.connected) return;
  if (linkTimer !== null) browser.clearInterval(linkTimer);
  linkTimer = null;
  byId<ImgEl>('qr').hidden = true;
  byId('link-status').textContent = `Linked${item.phoneNumber ? ` as +${item.phoneNumber}` : ''}.`;
}

async function refreshQr(): Promise<void> {
  const id = linkId;
  if (id === null) return;
  try {
    const { status, qr } = await call<{ status: string; qr: string | null }>('GET', `/admin/v1/instances/${encodeURIComponent(id)}/qr`);
    if (linkId !== id || linkTimer === null) return;
    const img = byId<ImgEl>('qr');
    if (qr) {
      if (qr !== shownQr) img.src = shownQr = qr;
      img.hidden = false;
      byId('link-status').textContent = 'Scan this QR with the phone (Linked devices → Link a device). It refreshes by itself.';
    } else {
      img.hidden = true;
      byId('link-status').textContent = status === 'connected' ? 'Linked.' : `No QR right now (status ${status}); waiting…`;
    }
  } catch (err) {
    if (linkId === id) byId('link-status').textContent = `The QR could not be read: ${message(err)}`;
  }
}

// ---- wiring the page
function onSubmit(id: string, run: () => Promise<void>): void {
  byId(id).addEventListener('submit', (ev) => {
    ev.preventDefault();
    void run();
  });
}

function init(): void {
  byId('confirm').addEventListener('close', () => {
    const resolve = answer;
    answer = null;
    resolve?.(byId<DialogEl>('confirm').returnValue === 'ok');
  });

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

  onSubmit('create-form', async () => {
    const name = byId<InputEl>('create-name');
    const driver = byId<InputEl>('create-driver');
    try {
      const created = await call<{ instance: InstanceItem; apiKey: string }>('POST', '/admin/v1/instances', { name: name.value, driver: driver.value });
      showKey(created.instance.name, created.apiKey);
      name.value = '';
      showError('');
      openLink(created.instance.id, created.instance.name);
    } catch (err) {
      showError(`Create: ${message(err)}`);
    }
  });

  byId('new-key-done').addEventListener('click', () => {
    byId('new-key-value').textContent = '';
    byId('new-key').hidden = true;
  });

  byId('link-close').addEventListener('click', closeLink);
  byId('settings-close').addEventListener('click', closeSettings);
  onSubmit('settings-form', saveSettings);
  initQueue();
  initWebhook();
  initDiagrams();

  onSubmit('pair-form', async () => {
    const id = linkId;
    const phone = byId<InputEl>('pair-phone').value.replace(/[^\d]/g, '');
    if (id === null) return;
    const out = byId('pair-code');
    out.textContent = 'Requesting a code (this can take up to a minute)…';
    try {
      const { code } = await call<{ code: string }>('POST', `/admin/v1/instances/${encodeURIComponent(id)}/pairing-code`, { phoneNumber: phone });
      if (linkId === id) out.textContent = `Enter this code on the phone: ${code}`;
    } catch (err) {
      if (linkId === id) out.textContent = `No code: ${message(err)}`;
    }
  });

  void checkSession().catch((err: unknown) => showSignIn(message(err)));
}

init();
