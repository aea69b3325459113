/**
 * The supervisor: the root of the actor system (systemId `supervisor`). It spawns one instance actor per
 * instance (machines/instance.machine.ts), which owns that instance's children: the session, the planner, the
 * dispatcher and the webhook sender. A crash of one instance's actors never touches another's; restarts with
 * backoff and quarantine are the instance machine's own business.
 *
 * The instance actors hang under SHARDS shard actors (`shardMachine`, spawned on first use; an instance's shard
 * follows from its id), not under the supervisor itself: XState copies a parent's table of children on every
 * spawn and stop, so ten thousand children of one parent would cost a copy of ten thousand entries per instance
 * started. An instance actor is found by its system id (`instanceActorId`), wherever it hangs.
 *
 * Besides the instance actors it runs two services of the whole process: the reply box (system id `replies`:
 * every ask's reply goes through it to the caller waiting for it) and the events actor (system id `events`: it
 * writes every instance's network and lifecycle events).
 *
 * Pure: the logics are placeholders here and provided by src/actors/system.ts with
 * `supervisorMachine.provide({ actors: { shard: shardMachine.provide({ actors: { instance } }), replies, events } })`.
 */
import { enqueueActions, fromCallback, setup, stopChild, type AnyActorLogic } from 'xstate';

export interface ChildInput {
  instanceId: string;
}

export type SupervisorEvent =
  /** spawn the actors of these instances (a start-up takes them in batches); one already running is left alone */
  | { type: 'INSTANCE.START'; instanceIds: readonly string[] }
  | { type: 'INSTANCE.STOP'; instanceId: string }
  /** the store became unreachable (`degraded`) or reachable again: every instance's planner hears it */
  | { type: 'STORE'; degraded: boolean; since: number }
  | { type: 'SHUTDOWN' };

export type ShardEvent = Exclude<SupervisorEvent, { type: 'SHUTDOWN' }>;

/** The system ids of the process-wide services and of an instance actor. */
export const SYSTEM_IDS = { replies: 'replies', events: 'events' } as const;
const INSTANCE_PREFIX = 'instance:';
export const instanceActorId = (instanceId: string) => `${INSTANCE_PREFIX}${instanceId}`;

/** How many shards the instance actors are spread over (a few dozen instances each at ten thousand). */
export const SHARDS = 256;
const SHARD_PREFIX = 'shard:';
/** The shard of an instance: the last four hex digits of its id (random in a UUID v4). */
export const shardOf = (instanceId: string): string => `${SHARD_PREFIX}${(Number.parseInt(instanceId.slice(-4), 16) || 0) % SHARDS}`;

const placeholder: AnyActorLogic = fromCallback<{ type: string }, ChildInput>(() => undefined);
const service: AnyActorLogic = fromCallback(() => undefined);

/** An actor's children by id (the table XState keeps; no copy of it in context). */
const childrenOf = (self: { getSnapshot(): unknown }): Record<string, unknown> => (self.getSnapshot() as { children: Record<string, unknown> }).children;

/** A shard: the parent of the instance actors whose ids fall into it. */
export const shardMachine = setup({
  types: { events: {} as ShardEvent },
  actors: { instance: placeholder },
}).createMachine({
  id: 'shard',
  description: 'The parent of the instance actors whose ids fall into one shard.',
  initial: 'running',
  states: {
    running: {
      description: 'Spawns, stops and tells its instance actors; never ends (the supervisor stops it).',
      on: {
        'INSTANCE.START': {
          actions: enqueueActions(({ enqueue, event, self }) => {
            const running = childrenOf(self);
            for (const instanceId of new Set(event.instanceIds)) {
              const id = instanceActorId(instanceId);
              if (running[id] === undefined) enqueue.spawnChild('instance', { id, systemId: id, input: { instanceId } });
            }
          }),
        },
        'INSTANCE.STOP': {
          actions: enqueueActions(({ enqueue, event, self }) => {
            const id = instanceActorId(event.instanceId);
            if (childrenOf(self)[id] !== undefined) enqueue(stopChild(id));
          }),
        },
        STORE: {
          actions: enqueueActions(({ enqueue, event, self }) => {
            for (const id of Object.keys(childrenOf(self))) if (id.startsWith(INSTANCE_PREFIX)) enqueue.sendTo(id, event);
          }),
        },
      },
    },
  },
});

export const supervisorMachine = setup({
  types: {
    events: {} as SupervisorEvent,
  },
  actors: { shard: placeholder, replies: service, events: service },
}).createMachine({
  id: 'supervisor',
  initial: 'running',
  invoke: [
    { id: 'replies', systemId: SYSTEM_IDS.replies, src: 'replies' },
    { id: 'events', systemId: SYSTEM_IDS.events, src: 'events' },
  ],
  states: {
    running: {
      on: {
        'INSTANCE.START': {
          actions: enqueueActions(({ enqueue, event, self }) => {
            const byShard = new Map<string, string[]>();
            for (const instanceId of event.instanceIds) {
              const shard = shardOf(instanceId);
              const ids = byShard.get(shard) ?? [];
              if (ids.length === 0) byShard.set(shard, ids);
              ids.push(instanceId);
            }
            const running = childrenOf(self);
            for (const [shard, instanceIds] of byShard) {
              if (running[shard] === undefined) enqueue.spawnChild('shard', { id: shard });
              enqueue.sendTo(shard, { type: 'INSTANCE.START', instanceIds });
            }
          }),
        },
        'INSTANCE.STOP': {
          actions: enqueueActions(({ enqueue, event, self }) => {
            const shard = shardOf(event.instanceId);
            if (childrenOf(self)[shard] !== undefined) enqueue.sendTo(shard, event);
          }),
        },
        STORE: {
          actions: enqueueActions(({ enqueue, event, self }) => {
            for (const id of Object.keys(childrenOf(self))) if (id.startsWith(SHARD_PREFIX)) enqueue.sendTo(id, event);
          }),
        },
        SHUTDOWN: 'stopped',
      },
    },
    stopped: { type: 'final' },
  },
});
