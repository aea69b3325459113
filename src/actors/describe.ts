/**
 * The actor tree for operators (/debug/actors): the supervisor, each instance actor with its secret-free
 * summary, and each instance's children (session, planner, dispatcher, webhook sender) with their status.
 * Built from snapshots only: nothing here reaches into an actor.
 */
import type { AnyActorRef } from 'xstate';
import { instanceActorId } from '../../machines/supervisor.machine.js';
import { summarize, type InstanceSnapshot } from '../../machines/instance.machine.js';

export interface ActorSummary {
  id: string;
  parent: string | null;
  machine: string;
  state: unknown;
  status: string;
  context: Record<string, unknown>;
}

/** The id /debug/actors gives the child `child` of an instance: `planner:<instanceId>` etc. */
export const childActorId = (child: string, instanceId: string) => `${child}:${instanceId}`;

export function describeActors(
  supervisor: AnyActorRef,
  instances: (InstanceSnapshot & { children?: Record<string, AnyActorRef | undefined> } | null)[],
  about: { node: string | null; instances: number; waitingAsks: number },
  childContext: (child: string, instanceId: string) => Record<string, unknown> = () => ({}),
): ActorSummary[] {
  const root = supervisor.getSnapshot() as { value: unknown; status: string };
  const out: ActorSummary[] = [{ id: 'supervisor', parent: null, machine: 'supervisor', state: root.value, status: root.status, context: { ...about } }];
  for (const s of instances) {
    if (!s) continue;
    const id = s.context.instanceId;
    const parent = instanceActorId(id);
    out.push({ id: parent, parent: 'supervisor', machine: 'instance', state: s.value, status: s.status, context: summarize(s) });
    for (const [child, ref] of Object.entries(s.children ?? {})) {
      if (!ref) continue;
      const status = (ref.getSnapshot() as { status: string }).status;
      out.push({ id: childActorId(child, id), parent, machine: child, state: status === 'active' ? 'running' : status, status, context: childContext(child, id) });
    }
  }
  return out;
}
