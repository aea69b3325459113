/**
 * The instances list: one row per instance, kept up to date from the event stream's `instances` events, with
 * its actions (link, settings, the queue, webhook and diagram panels; rotate key, restart, logout and delete
 * behind a confirmation; what a delete waits for, and why one was refused: `remove`), the create form, and the
 * new API key shown once (after create or rotation).
 */
import { ApiError, call, message } from './api.js';
import { browser, button, byId, h, onSubmit, timeOf, type ButtonEl, type El, type InputEl } from './dom.js';
import { confirmAction } from './confirm.js';
import { linkFromList, linkTarget, openLink } from './link.js';
import { openSettings } from './settings.js';
import { openQueue } from './queue.js';
import { openWebhook } from './webhook.js';
import { openDiagrams } from './diagrams.js';
import { closePanelsOf } from './panels.js';

interface QueueCounts {
  queued?: number;
  scheduled?: number;
  sending?: number;
  sent?: number;
  failed?: number;
  unknown?: number;
}
/** Why the state of an instance is not known: the node that runs it could not be asked (src/instances.ts). */
export interface StateUnknown {
  node: string;
  reason: string;
}
export interface InstanceItem {
  id: string;
  name: string;
  driver: string;
  /** null while the state is unknown (`stateUnknown`) */
  status: string | null;
  state?: string;
  phoneNumber?: string | null;
  connected?: boolean;
  lastError?: string | null;
  settings?: Record<string, unknown>;
  /** the node that runs it (several nodes on one database), or null while none does */
  node?: string | null;
  /** set while the node that runs it cannot be asked: its status and queue counts are unknown, not shown stale */
  stateUnknown?: StateUnknown | null;
  /** set while its view was asked and has not come back yet (status fields null): since when, and its last status */
  viewPending?: { since: string; lastStatus: string | null } | null;
  queue: QueueCounts | null;
  /** why `queue` is null although the state is known: the counts could not be read (or not yet) */
  queueError?: string | null;
}
interface Row {
  tr: El;
  status: El;
  detail: El;
  phone: El;
  driver: El;
  queue: El;
  link: El;
  /** what an action under way waits for (a delete: `remove`); the event stream leaves it alone */
  note: El;
  remove: ButtonEl;
  item: InstanceItem;
  /** the status the row shows (the pill's text while the list is current) */
  shown: string;
}

const rows = new Map<string, Row>();
/** when the instances shown were read (the last `instances` event), or null before the first */
let readAt: string | null = null;

/** The page's error line above the list. */
export function showError(text: string): void {
  byId('app-error').textContent = text;
}

/** Whether an operator is signed in on this page (the app is shown). */
const signedIn = (): boolean => !byId('app').hidden;

function showKey(name: string, apiKey: string): void {
  // an answer that came after a sign-out is not shown to whoever signs in next (found by the probe of the fix)
  if (!signedIn()) return;
  byId('new-key-name').textContent = name;
  byId('new-key-value').textContent = apiKey;
  byId('new-key').hidden = false;
}

/** What the row says of an instance whose node could not be asked. */
export const unknownText = (u: StateUnknown): string => `state and queue unknown: node ${u.node}, which runs it, ${u.reason}`;

/** What the row says of an instance whose view was asked and has not come back yet. */
export const pendingText = (item: InstanceItem, p: { since: string; lastStatus: string | null }): string =>
  `asked ${item.node ? `node ${item.node}, which runs it,` : 'the node that runs it'} at ${timeOf(p.since)}; no answer yet` +
  (p.lastStatus ? ` (last known: ${p.lastStatus})` : '');

function queueText(item: InstanceItem, unknown: StateUnknown | null): string {
  const q = item.queue;
  if (unknown) return 'unknown';
  if (item.viewPending) return 'waiting';
  if (!q && item.queueError) return `counts not read: ${item.queueError}`;
  if (!q) return '—';
  // waiting: queued and scheduled together (the Queue panel tells them apart; "queued" here said 1 beside the
  // panel's "queued 0 · scheduled 1" for the same job: found from the outside)
  return `waiting ${(q.queued ?? 0) + (q.scheduled ?? 0)} · sending ${q.sending ?? 0} · sent ${q.sent ?? 0} · failed ${q.failed ?? 0}`;
}

/** How long a delete may take before its row says what it waits for: far longer than one with nothing to wait for. */
const DELETE_PATIENCE_MS = 1_000;

/**
 * Delete an instance (confirmed). The gateway first has the node that runs it finish a send in flight (its queue
 * drained there, src/cluster/wiring.ts drainAtOwner, or handed over when it is this node), which lasts as long
 * as that network call may (DRIVER_CALL_TIMEOUT_MS, 30 s by default). Meanwhile the row says the delete waits for
 * that node, and nothing is deleted yet: at once when its counts show a send in flight, else once the delete has
 * taken DELETE_PATIENCE_MS; its Delete is disabled. `502 INSTANCE_UNREACHABLE` is the gateway's refusal while that
 * node cannot be reached (it may still be sending): nothing was deleted, and the error line says so, and why.
 */
async function remove(row: Row): Promise<void> {
  const { id, name, node } = row.item;
  const waiting = `Deleting: waiting for ${node ? `node ${node}, which runs it,` : 'the node that runs it'} to finish a send in flight; nothing is deleted until it has.`;
  row.remove.disabled = true;
  row.note.textContent = (row.item.queue?.sending ?? 0) > 0 ? waiting : 'Deleting…';
  const slow = browser.setTimeout(() => {
    row.note.textContent = waiting;
  }, DELETE_PATIENCE_MS);
  try {
    await call('DELETE', `/admin/v1/instances/${encodeURIComponent(id)}`);
    closePanelsOf(id);
    showError('');
  } catch (err) {
    const owner = node ? `Node ${node}, which runs it,` : 'The node that runs it';
    showError(
      err instanceof ApiError && err.code === 'INSTANCE_UNREACHABLE'
        ? `Delete ${name}: nothing was deleted. ${owner} could not be reached, or did not stop the instance in time, to finish a send in flight first; an instance is not deleted while a node may still be sending for it. Try again once that node answers.`
        : `Delete ${name}: ${message(err)}`,
    );
  } finally {
    browser.clearTimeout(slow);
    row.note.textContent = '';
    row.remove.disabled = false;
  }
}

function createRow(item: InstanceItem): Row {
  const status = h('span', 'status');
  const detail = h('small', 'detail muted');
  const note = h('small', 'detail note');
  const [phone, driver, queue] = [h('td'), h('td'), h('td', 'queue')];
  const link = button('Link', '', () => openLink(row.item.id, row.item.name));
  const act = (verb: string, question: string, run: () => Promise<unknown>) =>
    button(verb, '', () => {
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
  const removal = button('Delete', 'danger', () => {
    void (async () => {
      if (await confirmAction(`Delete ${row.item.name}? Its queue, key and session are removed for good (a send in flight finishes first).`)) await remove(row);
    })();
  });
  const tr = h(
    'tr',
    '',
    h('td', 'name', item.name),
    h('td', '', status, detail, note),
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
      removal,
    ),
  );
  tr.setAttribute('data-id', item.id);
  tr.setAttribute('data-name', item.name);
  const row: Row = { tr, status, detail, phone, driver, queue, link, note, remove: removal, item, shown: '' };
  return row;
}

/**
 * Show the instances as the event stream sent them (read at `at`): new rows added, changed ones updated, gone
 * ones removed; the list is current again (markStale undone).
 */
export function renderInstances(items: InstanceItem[], at: string): void {
  readAt = at;
  byId('stale').hidden = true;
  byId('stale').textContent = '';
  byId('instances').className = '';
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
    // its node not answering: "unknown" and why, never the last state seen nor a stopped instance's
    const unknown = item.stateUnknown ?? null;
    // its view asked and not back yet: "waiting", since when, never the last reading as if current
    const pending = unknown ? null : (item.viewPending ?? null);
    const status = unknown ? 'unknown' : pending ? 'waiting' : (item.status ?? 'unknown');
    row.shown = status;
    row.tr.setAttribute('data-status', status);
    row.status.className = `status ${status}`;
    row.status.textContent = status;
    // the machine's state for operators, and the last error when there is one
    row.detail.textContent = unknown
      ? unknownText(unknown)
      : pending
        ? pendingText(item, pending)
        : [item.state && item.state !== item.status ? item.state : '', item.lastError ?? ''].filter(Boolean).join(' · ');
    row.phone.textContent = item.phoneNumber ? `+${item.phoneNumber}` : '—';
    row.driver.textContent = item.driver;
    row.queue.textContent = queueText(item, unknown);
    // linking goes through the node that runs it: not offered while that node cannot be asked
    row.link.hidden = item.connected !== false;
    if (linkTarget() === item.id) linkFromList(item);
  }
  for (const [id, row] of rows) {
    if (seen.has(id)) continue;
    row.tr.remove();
    rows.delete(id);
    closePanelsOf(id);
  }
  byId('empty').hidden = rows.size > 0;
}

/**
 * No current reading of the instances (the event stream lost, refused, or the gateway could not read them): the
 * list says since when it is stale (the time of its last reading) and why, until the next reading; each row's
 * status is shown as the last one seen, greyed, never a current `connected`.
 */
export function markStale(reason: string): void {
  const note = byId('stale');
  note.hidden = false;
  note.setAttribute('data-since', readAt ?? '');
  note.textContent = readAt
    ? `Not current: stale since ${timeOf(readAt)}, the last reading: ${reason}. Retrying; states and counts may have changed since.`
    : `No reading yet: ${reason}. Retrying.`;
  byId('instances').className = 'stale';
  for (const row of rows.values()) {
    row.tr.setAttribute('data-status', 'stale');
    row.status.className = 'status stale';
    row.status.textContent = `last: ${row.shown}`;
    row.link.hidden = true;
  }
}

/** The shown key taken out of the page (its text too, not only hidden). */
function hideKey(): void {
  byId('new-key-name').textContent = '';
  byId('new-key-value').textContent = '';
  byId('new-key').hidden = true;
}

/**
 * Empty the list (signed out): everything of the signed-in operator taken out of the page, a key shown once
 * included (found from the outside: a rotated key was shown again to whoever signed in next in the same tab).
 */
export function clearInstances(): void {
  hideKey();
  for (const row of rows.values()) row.tr.remove();
  rows.clear();
  readAt = null;
  byId('stale').hidden = true;
  byId('instances').className = '';
}

async function create(): Promise<void> {
  const name = byId<InputEl>('create-name');
  const driver = byId<InputEl>('create-driver');
  try {
    const created = await call<{ instance: InstanceItem; apiKey: string; startDeferred?: string | null }>('POST', '/admin/v1/instances', { name: name.value, driver: driver.value });
    if (!signedIn()) return;
    showKey(created.instance.name, created.apiKey);
    name.value = '';
    // created, key valid, not started yet (its placement met the store failing): say why and what happens next
    showError(created.startDeferred ? `Created ${created.instance.name}: ${created.startDeferred}` : '');
    openLink(created.instance.id, created.instance.name);
  } catch (err) {
    showError(`Create: ${message(err)}`);
  }
}

export function initInstances(): void {
  onSubmit('create-form', create);
  byId('new-key-done').addEventListener('click', hideKey);
}
