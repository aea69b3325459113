/**
 * The state diagrams of one instance: the instance machine and the job machine, drawn from their own
 * definitions (GET /console/machines, built from the machines' state nodes on the server) as nested boxes in
 * statechart style: compound states hold their children, a parallel state its regions side by side, the initial
 * child is marked, and every state lists its transitions with their events (and guards) and targets. The live
 * state is highlighted: the instance's from the actor stream GET /debug/actors/stream (server-sent events; the
 * console's cookie is accepted there), a job's from the queue panel (the job chosen with its Diagram button).
 */
import { call, message } from './api.js';
import { browser, byId, h, showPanel, type El, type EventSourceLike } from './dom.js';
import type { PanelTarget } from './dom.js';

interface MachineTransition {
  event: string;
  guard: string | null;
  targets: string[];
}
interface MachineNode {
  id: string;
  key: string;
  type: string;
  initial: string | null;
  description: string | null;
  tags: string[];
  transitions: MachineTransition[];
  children: MachineNode[];
}
interface Machines {
  instance: { id: string; root: MachineNode };
  job: { id: string; root: MachineNode };
}
interface ActorSummary {
  id: string;
  machine: string;
  state: unknown;
}

/** One drawn diagram: its boxes by node id, to highlight the live state. */
interface Drawn {
  boxes: Map<string, { el: El; base: string }>;
}

let machines: Promise<Machines> | null = null;
let target: PanelTarget | null = null;
let stream: EventSourceLike | null = null;
let instanceDrawn: Drawn | null = null;
let jobDrawn: Drawn | null = null;
let job: { jobId: string; state: string } | null = null;

export const diagramsTarget = (): string | null => target?.id ?? null;

const lastSegment = (id: string) => id.slice(id.lastIndexOf('.') + 1);

function transitionText(t: MachineTransition): string {
  return `${t.event}${t.guard ? ` [${t.guard}]` : ''} → ${t.targets.map(lastSegment).join(', ')}`;
}

function drawNode(n: MachineNode, rootKey: string, drawn: Drawn, initial: boolean): El {
  const base = `sc-state sc-${n.type}${initial ? ' sc-initial' : ''}`;
  const head = h('div', 'sc-head', h('strong', '', n.id === '' ? rootKey : n.key));
  if (n.type === 'parallel') head.append(h('small', 'muted', ' parallel'));
  if (n.type === 'final') head.append(h('small', 'muted', ' final'));
  if (n.tags.length) head.append(h('small', 'sc-tags', ` ${n.tags.join(' ')}`));
  const box = h('div', base, head);
  if (n.description) box.setAttribute('title', n.description);
  const moving = n.transitions.filter((t) => t.targets.length > 0);
  const inPlace = [...new Set(n.transitions.filter((t) => t.targets.length === 0).map((t) => t.event))];
  if (moving.length || inPlace.length) {
    const list = h('ul', 'sc-trans', ...moving.map((t) => h('li', '', transitionText(t))));
    if (inPlace.length) list.append(h('li', 'muted', `in place: ${inPlace.join(', ')}`));
    box.append(list);
  }
  if (n.children.length) {
    box.append(h('div', n.type === 'parallel' ? 'sc-children sc-regions' : 'sc-children', ...n.children.map((c) => drawNode(c, rootKey, drawn, n.initial === c.key))));
  }
  box.setAttribute('data-state', n.id === '' ? '(root)' : n.id);
  drawn.boxes.set(n.id, { el: box, base });
  return box;
}

function draw(container: El, machine: { id: string; root: MachineNode }): Drawn {
  const drawn: Drawn = { boxes: new Map() };
  container.replaceChildren(drawNode(machine.root, machine.id, drawn, true));
  return drawn;
}

/** The node ids a (nested, parallel) state value makes active, the root ('') included. */
function activeIds(value: unknown, prefix = ''): string[] {
  const join = (k: string) => (prefix ? `${prefix}.${k}` : k);
  if (typeof value === 'string') return [join(value)];
  if (value && typeof value === 'object') return Object.entries(value as Record<string, unknown>).flatMap(([k, v]) => [join(k), ...activeIds(v, join(k))]);
  return [];
}

function highlight(drawn: Drawn | null, active: string[]): void {
  if (!drawn) return;
  const set = new Set(['', ...active]);
  for (const [id, { el, base }] of drawn.boxes) el.className = set.has(id) ? `${base} active` : base;
}

/** The active leaves: the states whose boxes have no active child. */
const leaves = (active: string[]) => active.filter((id) => !active.some((other) => other.startsWith(`${id}.`)));

function showInstanceState(value: unknown): void {
  const active = activeIds(value);
  highlight(instanceDrawn, active);
  byId('diagram-instance-state').textContent = leaves(active).join(' + ') || '—';
}

function drawJob(): void {
  highlight(jobDrawn, job ? [job.state] : []);
  byId('diagram-job-state').textContent = job ? `${job.jobId}: ${job.state}` : 'Choose a job in the Queue panel (its Diagram button).';
}

/** The queue panel chose a job (or saw it change): highlight its state. */
export function showJob(j: { jobId: string; state: string }): void {
  job = { jobId: j.jobId, state: j.state };
  drawJob();
}

export function openDiagrams(t: PanelTarget): void {
  closeDiagrams();
  target = t;
  showPanel('diagrams', t.name);
  byId('diagrams-error').textContent = '';
  byId('diagram-instance-state').textContent = 'connecting…';
  machines ??= call<Machines>('GET', '/console/machines');
  machines.catch(() => (machines = null));
  void (async () => {
    try {
      const m = await machines;
      if (!m || target !== t) return;
      instanceDrawn = draw(byId('diagram-instance'), m.instance);
      jobDrawn = draw(byId('diagram-job'), m.job);
      drawJob();
      listen(t);
    } catch (err) {
      if (target === t) byId('diagrams-error').textContent = `The machines could not be read: ${message(err)}`;
    }
  })();
}

function listen(t: PanelTarget): void {
  const es = new browser.EventSource('/debug/actors/stream');
  stream = es;
  const actorId = `instance:${t.id}`;
  es.addEventListener('actors', (ev) => {
    if (target !== t) return;
    const actor = (JSON.parse(ev.data) as { actors: ActorSummary[] }).actors.find((a) => a.id === actorId);
    if (actor) showInstanceState(actor.state);
    else byId('diagram-instance-state').textContent = 'not running on this node';
  });
  es.onerror = () => {
    if (target === t && es.readyState === browser.EventSource.CLOSED) byId('diagrams-error').textContent = 'The actor stream ended.';
  };
}

export function closeDiagrams(): void {
  stream?.close();
  stream = null;
  target = null;
  instanceDrawn = null;
  jobDrawn = null;
  job = null;
  byId('diagrams').hidden = true;
}

export function initDiagrams(): void {
  byId('diagrams-close').addEventListener('click', closeDiagrams);
}
