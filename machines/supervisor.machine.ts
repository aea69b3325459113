/**
 * The supervisor: the root of the actor system (systemId `supervisor`). It owns, per instance, three children:
 * the instance actor (connection lifecycle, machines/instance.machine.ts), its queue (planner + dispatcher) and
 * its webhook sender. A crash of one instance's actors never touches another's; restarts with backoff and
 * quarantine are the instance machine's own business.
 *
 * Pure: the three logics are placeholders here and provided by the runtime (src/actors/runtime.ts) with
 * `supervisorMachine.provide({ actors: { instance, queue, webhooks } })`.
 */
import { assign, enqueueActions, fromCallback, setup, stopChild, type AnyActorLogic } from 'xstate';

export interface ChildInput {
  instanceId: string;
}

export type SupervisorEvent =
  | { type: 'INSTANCE.START'; instanceId: string }
  | { type: 'INSTANCE.STOP'; instanceId: string }
  | { type: 'SHUTDOWN' };

export const childIds = (instanceId: string) => ({
  instance: `instance:${instanceId}`,
  queue: `queue:${instanceId}`,
  webhooks: `webhooks:${instanceId}`,
});

// Any logic taking `{instanceId}` as input fits: the runtime provides a machine and two callback actors.
const placeholder: AnyActorLogic = fromCallback<{ type: string }, ChildInput>(() => undefined);

export const supervisorMachine = setup({
  types: {
    context: {} as { instances: string[] },
    events: {} as SupervisorEvent,
  },
  actors: { instance: placeholder, queue: placeholder, webhooks: placeholder },
}).createMachine({
  id: 'supervisor',
  context: { instances: [] },
  initial: 'running',
  states: {
    running: {
      on: {
        'INSTANCE.START': {
          guard: ({ context, event }) => !context.instances.includes(event.instanceId),
          actions: [
            enqueueActions(({ enqueue, event }) => {
              const ids = childIds(event.instanceId);
              const input = { instanceId: event.instanceId };
              enqueue.spawnChild('instance', { id: ids.instance, systemId: ids.instance, input });
              enqueue.spawnChild('queue', { id: ids.queue, systemId: ids.queue, input });
              enqueue.spawnChild('webhooks', { id: ids.webhooks, systemId: ids.webhooks, input });
            }),
            assign({ instances: ({ context, event }) => [...context.instances, event.instanceId] }),
          ],
        },
        'INSTANCE.STOP': {
          guard: ({ context, event }) => context.instances.includes(event.instanceId),
          actions: [
            enqueueActions(({ enqueue, event }) => {
              const ids = childIds(event.instanceId);
              enqueue(stopChild(ids.queue));
              enqueue(stopChild(ids.webhooks));
              enqueue(stopChild(ids.instance));
            }),
            assign({ instances: ({ context, event }) => context.instances.filter((i) => i !== event.instanceId) }),
          ],
        },
        SHUTDOWN: 'stopped',
      },
    },
    stopped: { type: 'final' },
  },
});
