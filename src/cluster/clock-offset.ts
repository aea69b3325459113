/**
 * How far this node's clock is from the database's. Leases and liveness are kept on the database's clock
 * (src/cluster/leases.ts), but a node plans its instances' slots, their validity (`expiresAt`) and quiet hours on
 * its own: a node whose clock runs ahead sends early and expires early, and after a hand-over the next owner
 * reads what the last one planned on its own clock. So each round reads the database's clock between two readings
 * of the node's: the offset is the database's reading from their midpoint, known within half the round trip. An
 * offset past OFFSET_WARN_MS beyond that is said in the log once (and when it agrees again), and every node's is
 * listed by the operator API (GET /admin/v1/nodes `clockOffsetMs`). The clocks are the operator's to synchronise
 * (NTP); the gateway does not correct them. What a change is said as in the log is written here too
 * (`readAndSay`), beside the thresholds that decide it.
 */
import type { Logger } from '../log.js';

/** An offset the log warns of: a second, beyond the reading's own uncertainty. */
export const OFFSET_WARN_MS = 1_000;
/** Said to agree again under half of it, so that an offset about the threshold is not said at every round. */
const OFFSET_AGREE_MS = OFFSET_WARN_MS / 2;

export interface OffsetReading {
  /** the node's clock minus the database's (ms; positive: the node's clock is ahead) */
  offsetMs: number;
  /** half the round trip of the reading: the offset is known within it */
  withinMs: number;
}

/** What a reading changed: `warn` when the offset just went past the threshold, `agree` when it just came back. */
export type OffsetChange = 'warn' | 'agree' | null;

export class ClockOffset {
  private last: OffsetReading | null = null;
  private warned = false;

  /** The node's clock read `before` and `after` the database's `database` reading. */
  read(before: number, database: number, after: number): OffsetChange {
    return this.measure(before, database, after).change;
  }

  /** A reading, as `read`, whose change is said in the log (`node`: this node's id), once as it happens. */
  readAndSay(before: number, database: number, after: number, log: Logger, node: string): void {
    const { reading, change } = this.measure(before, database, after);
    if (change === null) return;
    const { offsetMs, withinMs } = reading;
    const fields = { node, clockOffsetMs: offsetMs, withinMs };
    if (change === 'warn') {
      log.warn(
        fields,
        `this node's clock is ${Math.abs(offsetMs)} ms ${offsetMs > 0 ? 'ahead of' : 'behind'} the database's: each node plans its instances' slots, validity and quiet hours on its own clock; synchronise the clocks (NTP)`,
      );
    } else {
      log.info(fields, "this node's clock agrees with the database's again");
    }
  }

  private measure(before: number, database: number, after: number): { reading: OffsetReading; change: OffsetChange } {
    const reading = { offsetMs: Math.round((before + after) / 2 - database), withinMs: Math.ceil((after - before) / 2) };
    this.last = reading;
    const off = Math.abs(reading.offsetMs);
    if (!this.warned && off - reading.withinMs > OFFSET_WARN_MS) {
      this.warned = true;
      return { reading, change: 'warn' };
    }
    if (this.warned && off + reading.withinMs < OFFSET_AGREE_MS) {
      this.warned = false;
      return { reading, change: 'agree' };
    }
    return { reading, change: null };
  }

  /** The last reading, null before the first. */
  get reading(): OffsetReading | null {
    return this.last;
  }
}
