/**
 * The Queue panel of one instance: its counts (GET /admin/v1/instances/:id/queue) and its jobs
 * (GET .../queue/items, oldest first), refreshed every 2 s while open. A waiting job (queued, scheduled) can be
 * cancelled, a failed, expired or cancelled one requeued (a new job), and the waiting jobs re-planned (after
 * cancels, the rest move forward); a refusal shows the server's message. Counts the node that runs the instance
 * did not give are shown unknown, with its refusal (which names that node), never the last ones read.
 * Selecting a job shows its state in the job diagram (diagrams.ts).
 */
import { call, message } from './api.js';
import { button, byId, h, refresher, showPanel, when, type InputEl, type PanelTarget } from './dom.js';
import { diagramsTarget, openDiagrams, showJob } from './diagrams.js';

interface Summary {
  mode: string;
  counts: { queued: number; scheduled: number; sending: number; sent24h: number; failed24h: number; unknown24h: number };
  nextAt: string | null;
}
export interface JobView {
  jobId: string;
  state: string;
  phone: string | null;
  chatId: string | null;
  scheduledAt: string | null;
  terminalAt: string | null;
  deliveryConfidence: string;
  messageId: string | null;
  resultCode: string | null;
  errorMessage: string | null;
  unknownReason: string | null;
  previousJobId?: string;
}

const PAGE = 200;
const WAITING = new Set(['queued', 'scheduled']);
const REQUEUEABLE = new Set(['failed', 'expired', 'cancelled']);

let target: PanelTarget | null = null;
const polling = refresher(() => refresh());
let selected: string | null = null;

export const queueTarget = (): string | null => target?.id ?? null;

const base = () => `/admin/v1/instances/${encodeURIComponent(target?.id ?? '')}`;

export function openQueue(t: PanelTarget): void {
  closeQueue();
  target = t;
  showPanel('queue', t.name);
  byId('queue-error').textContent = '';
  byId('queue-note').textContent = '';
  byId('queue-items').replaceChildren();
  polling.start();
}

export function closeQueue(): void {
  polling.stop();
  target = null;
  selected = null;
  byId('queue').hidden = true;
}

function outcome(j: JobView): string {
  if (j.state === 'sent') return `${j.deliveryConfidence}${j.messageId ? ` · ${j.messageId}` : ''}`;
  if (j.state === 'failed') return [j.resultCode, j.errorMessage].filter(Boolean).join(': ');
  if (j.state === 'unknown') return j.unknownReason ?? 'unknown';
  if (j.state === 'cancelled' || j.state === 'expired') return `${j.state} ${when(j.terminalAt)}`;
  return '';
}

async function act(verb: string, run: () => Promise<string>): Promise<void> {
  const id = target?.id;
  byId('queue-error').textContent = '';
  byId('queue-note').textContent = '';
  try {
    const note = await run();
    if (target?.id === id) byId('queue-note').textContent = note;
  } catch (err) {
    if (target?.id === id) byId('queue-error').textContent = `${verb}: ${message(err)}`;
  }
  await refresh();
}

function jobRow(j: JobView) {
  const tr = h(
    'tr',
    j.jobId === selected ? 'selected' : '',
    h('td', 'mono', j.jobId),
    h('td', '', h('span', `state ${j.state}`, j.state)),
    h('td', '', j.phone ? `+${j.phone}` : (j.chatId ?? '—')),
    h('td', '', when(j.scheduledAt)),
    h('td', 'outcome', outcome(j)),
    h(
      'td',
      'actions',
      ...(WAITING.has(j.state)
        ? [button('Cancel', '', () => void act('Cancel', async () => {
            const r = await call<JobView>('DELETE', `${base()}/messages/${encodeURIComponent(j.jobId)}`);
            return `${r.jobId} ${r.state}.`;
          }))]
        : []),
      ...(REQUEUEABLE.has(j.state)
        ? [button('Requeue', '', () => void act('Requeue', async () => {
            const r = await call<{ jobId: string }>('POST', `${base()}/messages/${encodeURIComponent(j.jobId)}/requeue`);
            return `Requeued ${j.jobId} as ${r.jobId}.`;
          }))]
        : []),
      button('Diagram', '', () => {
        selected = j.jobId;
        if (target && diagramsTarget() !== target.id) openDiagrams(target);
        showJob(j);
        void refresh();
      }),
    ),
  );
  tr.setAttribute('data-job', j.jobId);
  tr.setAttribute('data-state', j.state);
  return tr;
}

async function refresh(): Promise<void> {
  const t = target;
  if (!t) return;
  const state = byId<InputEl>('queue-state').value;
  // the counts come from the node that runs the instance, the jobs from the database: one failing does not keep
  // the other's last answer on show
  const [counted, listed] = await Promise.allSettled([
    call<Summary>('GET', `${base()}/queue`),
    call<{ items: JobView[]; nextCursor: string | null }>('GET', `${base()}/queue/items?limit=${PAGE}${state ? `&state=${encodeURIComponent(state)}` : ''}`),
  ]);
  if (target !== t) return;
  if (counted.status === 'fulfilled') {
    const summary = counted.value;
    const c = summary.counts;
    byId('queue-counts').textContent =
      `mode ${summary.mode} · queued ${c.queued} · scheduled ${c.scheduled} · sending ${c.sending} · last 24 h: sent ${c.sent24h}, failed ${c.failed24h}, unknown ${c.unknown24h}` +
      (summary.nextAt ? ` · next slot ${when(summary.nextAt)}` : '');
  } else {
    // never the last counts read: they are not the queue's counts now
    byId('queue-counts').textContent = `counts unknown: ${message(counted.reason)}`;
  }
  if (listed.status === 'rejected') {
    byId('queue-error').textContent = message(listed.reason);
    return;
  }
  const page = listed.value;
  byId('queue-items').replaceChildren(...page.items.map(jobRow));
  byId('queue-empty').hidden = page.items.length > 0;
  byId('queue-more').hidden = page.nextCursor === null;
  const current = page.items.find((j) => j.jobId === selected);
  if (current) showJob(current);
}

export function initQueue(): void {
  byId('queue-close').addEventListener('click', closeQueue);
  byId('queue-state').addEventListener('change', () => void refresh());
  byId('queue-replan').addEventListener('click', () => void act('Re-plan', async () => {
    const r = await call<{ affected: number }>('POST', `${base()}/queue/replan`);
    return `Re-planned: ${r.affected} ${r.affected === 1 ? 'job' : 'jobs'} moved.`;
  }));
}
