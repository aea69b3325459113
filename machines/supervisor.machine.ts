/**
 * The supervisor: the root of the actor system (systemId `supervisor`). It spawns one instance actor per
 * instance (machines/instance.machine.ts), which owns that instance's children: the session, the planner, the
 * dispatcher and the webhook sender. A crash of one instance's actors never touches another's; restarts with
 * backoff and quarantine are the instance machine's own business.
 *
 * Besides the instance actors it runs two services of the whole process: the reply box (system id `replies`:
 * every ask's reply goes through it to the caller waiting for it) and the events actor (system id `events`: it
 * writes every instance's network and lifecycle events).
 *
 * Pure: the logics are placeholders here and provided by src/actors/system.ts with
 * `supervisorMachine.provide({ actors: { instance, replies, events } })`.
 */
import { assign, enqueueActions, fromCallback, setup, stopChild, type AnyActorLogic } from 'xstate';

export interface ChildInput {
  instanceId: string;
}

export type SupervisorEvent =
  | { type: 'INSTANCE.START'; instanceId: string }
  | { type: 'INSTANCE.STOP'; instanceId: string }
  /** the store became unreachable (`degraded`) or reachable again: every instance's planner hears it */
  | { type: 'STORE'; degraded: boolean; since: number }
  | { type: 'SHUTDOWN' };

/** The system ids of the process-wide services and of an instance actor. */
export const SYSTEM_IDS = { replies: 'replies', events: 'events' } as const;
export const instanceActorId = (instanceId: string) => `instance:${instanceId}`;

const placeholder: AnyActorLogic = fromCallback<{ type: string }, ChildInput>(() => undefined);
const service: AnyActorLogic = fromCallback(() => undefined);

export const supervisorMachine = setup({
  types: {
    context: {} as { instances: string[] },
    events: {} as SupervisorEvent,
  },
  actors: { instance: placeholder, replies: service, events: service },
}).createMachine({
  id: 'supervisor',
  context: { instances: [] },
  initial: 'running',
  invoke: [
    { id: 'replies', systemId: SYSTEM_IDS.replies, src: 'replies' },
    { id: 'events', systemId: SYSTEM_IDS.events, src: 'events' },
  ],
  states: {
    running: {
      on: {
        'INSTANCE.START': {
          guard: ({ context, event }) => !context.instances.includes(event.instanceId),
          actions: [
            enqueueActions(({ enqueue, event }) => {
              const id = instanceActorId(event.instanceId);
              enqueue.spawnChild('instance', { id, systemId: id, input: { instanceId: event.instanceId } });
            }),
            assign({ instances: ({ context, event }) => [...context.instances, event.instanceId] }),
          ],
        },
        'INSTANCE.STOP': {
          guard: ({ context, event }) => context.instances.includes(event.instanceId),
          actions: [
            enqueueActions(({ enqueue, event }) => enqueue(stopChild(instanceActorId(event.instanceId)))),
            assign({ instances: ({ context, event }) => context.instances.filter((i) => i !== event.instanceId) }),
          ],
        },
        STORE: {
          actions: enqueueActions(({ enqueue, event, context }) => {
            for (const id of context.instances) enqueue.sendTo(instanceActorId(id), event);
          }),
        },
        SHUTDOWN: 'stopped',
      },
    },
    stopped: { type: 'final' },
  },
});
