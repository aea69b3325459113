/**
 * How a transition reads in a diagram: its event (`always`, `after 500 ms`, `done <actor>`…) and its guard
 * (`a && !b`). Shared by the generated docs (scripts/diagrams.ts) and the console's diagrams
 * (src/console/machines.ts). Pure: reads the machine definitions only.
 */

/** A transition as far as its label needs it. */
export interface LabelledTransition {
  eventType: string;
  delay?: unknown;
}

export function guardLabel(guard: unknown): string {
  if (typeof guard === 'string') return guard;
  if (typeof guard === 'function') {
    const inner: unknown = 'guards' in guard ? guard.guards : undefined;
    const parts = Array.isArray(inner) ? inner.map(guardLabel) : [];
    if (guard.name === 'and') return parts.join(' && ');
    if (guard.name === 'or') return parts.join(' || ');
    if (guard.name === 'not') return `!${parts[0] ?? ''}`;
    if (guard.name === 'stateIn' && 'stateValue' in guard) return `in ${JSON.stringify(guard.stateValue)}`;
    return guard.name || 'guard';
  }
  if (guard && typeof guard === 'object' && 'type' in guard && typeof guard.type === 'string') return guard.type;
  return 'guard';
}

export function eventLabel(t: LabelledTransition): string {
  const ev = t.eventType;
  if (ev === '') return 'always';
  if (ev.startsWith('xstate.after.')) {
    const delay: unknown = 'delay' in t ? t.delay : undefined;
    return `after ${typeof delay === 'number' ? `${delay} ms` : String(delay)}`;
  }
  if (ev.startsWith('xstate.done.actor.')) return `done ${ev.slice('xstate.done.actor.'.length)}`;
  if (ev.startsWith('xstate.error.actor.')) return `error ${ev.slice('xstate.error.actor.'.length)}`;
  if (ev.startsWith('xstate.done.state.')) return 'done';
  return ev;
}
