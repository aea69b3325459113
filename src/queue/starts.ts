/**
 * The queue starts of one node, read together: the queues that start at the same moment (a start-up, a batch
 * of instances taken over) load what they start from with one statement per kind of read for all of them
 * (src/queue/sql/loadStarts.ts), the way the group commit writes acceptances (src/store/batch.ts `Batcher`).
 *
 * A failed read fails every start of its batch alike (the store, not one instance, is the cause): each queue
 * tries its start again later (src/queue/worker.ts), and the batch is not split into one read per instance.
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
      try {
        const loaded = await loadStarts(pool, ids, clock.now(), BOOT_ID);
        return ids.map((id) => loaded.get(id) ?? new Error('no start state read'));
      } catch (err) {
        const e = err instanceof Error ? err : new Error(String(err));
        return ids.map(() => e);
      }
    }, START_BATCH);
  }

  /** What the queue of `instanceId` starts from, read with the other starts of this moment. */
  load(instanceId: string): Promise<StartState> {
    return this.batcher.submit(instanceId);
  }
}
