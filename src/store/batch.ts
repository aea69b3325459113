/**
 * A group commit for writes that many callers make at once: the first call is written at once, calls that
 * arrive while a write is under way wait and go together into the next one (one statement, one transaction
 * for all of them), so a burst costs a few round trips instead of one each. At most one write runs at a time.
 *
 * Each caller gets its own result or error: `write(inputs)` answers one entry per input, an Error for an input
 * that failed alone. When the whole write fails (the transaction rolled back) and it held several inputs,
 * each is written again on its own, so one bad input cannot fail the others; unless the store failed it
 * (unreachable, too slow, a COMMIT of unknown outcome): each alone would meet the same store, one after another
 * (found from the outside: creations asked during an outage waited one store deadline each, in turn), and after an
 * unknown COMMIT a write again could do twice what was done once. Every input then fails with that error.
 */
import { storeCouldNotTake } from './health.js';

export type BatchWrite<I, O> = (inputs: I[]) => Promise<(O | Error)[]>;

interface Waiting<I, O> {
  input: I;
  resolve(value: O): void;
  reject(err: unknown): void;
}

export class Batcher<I, O> {
  private waiting: Waiting<I, O>[] = [];
  private running: Promise<void> | null = null;

  constructor(
    private readonly write: BatchWrite<I, O>,
    /** the most inputs one write takes (the rest go into the next) */
    private readonly max = 500,
  ) {}

  submit(input: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.waiting.push({ input, resolve, reject });
      // a burst of synchronous calls (a loop) goes into the first write together
      this.running ??= Promise.resolve().then(() => this.drain());
    });
  }

  /** Resolves once nothing is waiting or being written. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private async drain(): Promise<void> {
    while (this.waiting.length > 0) {
      const batch = this.waiting.splice(0, this.max);
      try {
        settle(batch, await this.write(batch.map((w) => w.input)));
      } catch (err) {
        if (batch.length === 1 || storeCouldNotTake(err)) for (const w of batch) w.reject(err);
        else for (const w of batch) await this.write([w.input]).then((r) => settle([w], r), (e: unknown) => w.reject(e));
      }
    }
    this.running = null;
  }
}

function settle<I, O>(batch: Waiting<I, O>[], results: (O | Error)[]): void {
  batch.forEach((w, i) => {
    const r = results[i];
    if (r instanceof Error) w.reject(r);
    else if (i >= results.length) w.reject(new Error('the batch write answered fewer results than inputs'));
    else w.resolve(r as O);
  });
}
