/**
 * The queue starts of one node, read together: the queues that start at the same moment (a start-up, a batch
 * of instances taken over) load what they start from with one statement per kind of read for all of them
 * (src/queue/sql/loadStarts.ts), the way the group commit writes acceptances (src/store/batch.ts `Batcher`).
 *
 * A batch is read in groups of instances bounded by the rows they bring, and a failed group read fails the
 * starts of that group alone, which try again later (src/queue/worker.ts); the other groups are read all the same.
 * A failure before any group (the counts) fails every start of the batch alike (the store, not one instance, is
 * the cause), and the batch is not split into one read per instance. Every start of a batch is answered at its
 * end: handing each queue its state as soon as its group was read made a start of 200 full queues slower, every
 * queue loaded 35.8 s after the start against 16.8 (the gateway's CPU 18.1 s against 10.9; bench/full-node.ts,
 * in turn on machine Y), the early queues' plans and writes running beside the later groups' reads.
 */
import type { Clock } from '../clock.js';
import type { Pool } from '../store/pool.js';
import { Batcher } from '../store/batch.js';
import { BOOT_ID } from './sync-callers.js';
import { loadStarts, type StartState } from './sql/loadStarts.js';

export type { StartState } from './sql/loadStarts.js';

/** The most queues one read starts. */
const START_BATCH = 500;

export class QueueStarts {
  private readonly batcher: Batcher<string, StartState>;

  constructor(pool: Pool, clock: Clock) {
    this.batcher = new Batcher<string, StartState>(async (ids) => {
      const results = new Map<string, StartState | Error>();
      const onGroup = (group: readonly string[], read: Map<string, StartState> | Error) => {
        for (const id of group) results.set(id, read instanceof Error ? read : read.get(id) ?? new Error('no start state read'));
      };
      try {
        await loadStarts(pool, ids, clock.now(), BOOT_ID, { onGroup });
      } catch (err) {
        const e = err instanceof Error ? err : new Error(String(err));
        for (const id of ids) if (!results.has(id)) results.set(id, e);
      }
      return ids.map((id) => results.get(id) ?? new Error('no start state read'));
    }, START_BATCH);
  }

  /** What the queue of `instanceId` starts from, read with the other starts of this moment. */
  load(instanceId: string): Promise<StartState> {
    return this.batcher.submit(instanceId);
  }
}
