/**
 * The Webhook panel of one instance: its configuration (url, events, allowPrivate, enabled) set with
 * PUT /admin/v1/instances/:id/webhook or removed, the server's validation messages shown as they are; the
 * secret is write-only (the server never shows it: the field starts empty and a save needs it again), and so is a
 * URL the server shows masked (showUrl). Below, the
 * deliveries with their attempts (status, error), refreshed every 2 s while open, and a Redeliver button for a
 * failed or delivered one (POST .../deliveries/:eventId/redeliver).
 */
import { ApiError, call, message, refusal } from './api.js';
import { button, byId, h, onSubmit, refresher, showPanel, when, type CheckEl, type InputEl } from './dom.js';
import type { PanelTarget } from './dom.js';

interface WebhookView {
  url: string;
  events: string[];
  allowPrivate: boolean;
  enabled: boolean;
}
interface Attempt {
  attempt: number;
  at: string;
  status: number | null;
  error: string | null;
  durationMs: number;
}
interface Delivery {
  eventId: string;
  event: string;
  state: string;
  attempts: number;
  maxAttempts: number;
  createdAt: string;
  deliveredAt: string | null;
  nextAttemptAt: string | null;
  attemptLog: Attempt[];
}

let target: PanelTarget | null = null;
const polling = refresher(() => refreshDeliveries());

export const webhookTarget = (): string | null => target?.id ?? null;
const base = () => `/admin/v1/instances/${encodeURIComponent(target?.id ?? '')}/webhook`;

function clearMessages(): void {
  byId('webhook-error').textContent = '';
  byId('webhook-saved').textContent = '';
}

/** What the server shows for a masked part of a webhook URL (src/webhooks/config.ts maskWebhookUrl). */
const URL_MASK = '***';
/** the URL field's placeholder as the page (src/console/page.ts) writes it */
const URL_PLACEHOLDER = 'https://hooks.example.com/gateway';

/**
 * The URL field. A URL the server shows masked (its credentials, a token in its path, its query values) is not the
 * one deliveries go to: kept in the field, a save would store the masks in its place. So the field then starts
 * empty, the masked URL as its placeholder, and a save needs the full URL again, as it needs the secret.
 */
function showUrl(url: string | null): void {
  const field = byId<InputEl>('webhook-url');
  const masked = url !== null && url.includes(URL_MASK);
  field.value = masked || url === null ? '' : url;
  field.placeholder = masked ? `${url} (shown masked: type the full URL to save)` : URL_PLACEHOLDER;
}

function showConfig(cfg: WebhookView | null): void {
  showUrl(cfg?.url ?? null);
  byId<InputEl>('webhook-events').value = cfg ? cfg.events.join(', ') : '';
  byId<CheckEl>('webhook-private').checked = cfg?.allowPrivate ?? false;
  byId<CheckEl>('webhook-enabled').checked = cfg?.enabled ?? true;
  byId<InputEl>('webhook-secret').value = '';
  byId('webhook-state').textContent = cfg ? (cfg.enabled ? 'Configured and enabled.' : 'Configured, disabled.') : 'No webhook configured.';
  byId('webhook-delete').hidden = cfg === null;
}

export function openWebhook(t: PanelTarget): void {
  closeWebhook();
  target = t;
  showPanel('webhook', t.name);
  clearMessages();
  showConfig(null);
  byId('webhook-state').textContent = 'Reading…';
  byId('deliveries-body').replaceChildren();
  void loadConfig();
  polling.start();
}

export function closeWebhook(): void {
  polling.stop();
  target = null;
  byId<InputEl>('webhook-secret').value = '';
  byId('webhook').hidden = true;
}

async function loadConfig(): Promise<void> {
  const t = target;
  try {
    const cfg = await call<WebhookView>('GET', base());
    if (target === t) showConfig(cfg);
  } catch (err) {
    if (target !== t) return;
    if (err instanceof ApiError && err.code === 'NOT_FOUND') showConfig(null);
    else byId('webhook-error').textContent = message(err);
  }
}

async function save(): Promise<void> {
  const t = target;
  if (!t) return;
  clearMessages();
  const events = byId<InputEl>('webhook-events').value.split(/[\s,]+/).filter(Boolean);
  const body = {
    url: byId<InputEl>('webhook-url').value.trim(),
    secret: byId<InputEl>('webhook-secret').value,
    ...(events.length ? { events } : {}),
    allowPrivate: byId<CheckEl>('webhook-private').checked,
    enabled: byId<CheckEl>('webhook-enabled').checked,
  };
  try {
    const saved = await call<WebhookView>('PUT', base(), body);
    if (target !== t) return;
    showConfig(saved);
    byId('webhook-saved').textContent = 'Saved.';
  } catch (err) {
    if (target === t) byId('webhook-error').textContent = refusal(err);
  }
}

async function remove(): Promise<void> {
  const t = target;
  clearMessages();
  try {
    await call('DELETE', base());
    if (target !== t) return;
    showConfig(null);
    byId('webhook-saved').textContent = 'Removed; deliveries still pending fail.';
  } catch (err) {
    if (target === t) byId('webhook-error').textContent = refusal(err);
  }
}

async function sendTest(): Promise<void> {
  const t = target;
  clearMessages();
  try {
    const { eventId } = await call<{ eventId: string }>('POST', `${base()}/test`, {});
    if (target === t) byId('webhook-saved').textContent = `Test event ${eventId} queued.`;
  } catch (err) {
    if (target === t) byId('webhook-error').textContent = refusal(err);
  }
  await refreshDeliveries();
}

async function redeliver(eventId: string): Promise<void> {
  const t = target;
  clearMessages();
  try {
    await call('POST', `${base()}/deliveries/${encodeURIComponent(eventId)}/redeliver`);
    if (target === t) byId('webhook-saved').textContent = `${eventId} is pending again.`;
  } catch (err) {
    if (target === t) byId('webhook-error').textContent = `Redeliver: ${message(err)}`;
  }
  await refreshDeliveries();
}

function attemptText(a: Attempt): string {
  return `#${a.attempt} ${a.status ?? '—'}${a.error ? ` ${a.error}` : ''} (${a.durationMs} ms, ${when(a.at)})`;
}

function deliveryRow(d: Delivery) {
  const attempts = h('ol', 'attempts', ...d.attemptLog.map((a) => {
    const li = h('li', a.error ? 'bad' : 'good', attemptText(a));
    li.setAttribute('value', String(a.attempt));
    return li;
  }));
  const tr = h(
    'tr',
    '',
    h('td', 'mono', d.eventId),
    h('td', '', d.event),
    h('td', '', h('span', `state ${d.state}`, d.state)),
    h('td', 'attempt-count', `${d.attempts}/${d.maxAttempts}`),
    h('td', '', attempts),
    h('td', '', when(d.createdAt)),
    h('td', 'actions', ...(d.state === 'pending' ? [] : [button('Redeliver', '', () => void redeliver(d.eventId))])),
  );
  tr.setAttribute('data-event', d.eventId);
  tr.setAttribute('data-state', d.state);
  return tr;
}

async function refreshDeliveries(): Promise<void> {
  const t = target;
  if (!t) return;
  try {
    const page = await call<{ items: Delivery[] }>('GET', `${base()}/deliveries?limit=50`);
    if (target !== t) return;
    byId('deliveries-body').replaceChildren(...page.items.map(deliveryRow));
    byId('deliveries-empty').hidden = page.items.length > 0;
  } catch (err) {
    if (target === t) byId('webhook-error').textContent = message(err);
  }
}

export function initWebhook(): void {
  onSubmit('webhook-form', save);
  byId('webhook-delete').addEventListener('click', () => void remove());
  byId('webhook-test').addEventListener('click', () => void sendTest());
  byId('webhook-close').addEventListener('click', closeWebhook);
}
