/**
 * The synchronous v1 callers waiting on this node (legacy-queued.ts), so that a graceful stop answers each of
 * them before it hands its instances over: a caller that gets no answer at all resends (SPEC.md: "A caller
 * resends only when no response arrived at all"), and one whose message went out meanwhile would send it twice.
 * Found from the outside: SIGTERM during a v1 send-message's wait closed the connection with no answer.
 *
 * On `stop` every wait in progress ends at once (its route then says what became of the message: cancelled and
 * 503 without ceilings, still queued and 504 with them, the outcome of one being sent), a new synchronous send
 * is refused before anything is accepted, and the stop waits (up to its bound) for those answers.
 */
import { setMaxListeners } from 'node:events';

export class V1Waits {
  private readonly ctl = new AbortController();
  private readonly open = new Set<Promise<unknown>>();

  constructor() {
    // one listener per wait in progress, each removed when its wait ends: any number is right (found from the
    // outside: 16 waits at once printed node's MaxListenersExceededWarning on stderr)
    setMaxListeners(0, this.ctl.signal);
  }

  /** the gateway has begun to stop */
  get stopping(): boolean {
    return this.ctl.signal.aborted;
  }

  /** `p`, or null as soon as the gateway begins to stop (at once if it has) */
  untilStop<T>(p: Promise<T>): Promise<T | null> {
    const { signal } = this.ctl;
    if (signal.aborted) return Promise.resolve(null);
    return new Promise<T | null>((resolve, reject) => {
      const onStop = () => resolve(null);
      signal.addEventListener('abort', onStop, { once: true });
      p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onStop));
    });
  }

  /** a caller's wait and answer, which a stop waits for */
  track<T>(p: Promise<T>): Promise<T> {
    this.open.add(p);
    const done = () => void this.open.delete(p);
    p.then(done, done);
    return p;
  }

  /** End every wait now and give their answers up to `ms` to be written. */
  async stop(ms: number): Promise<void> {
    this.ctl.abort();
    if (this.open.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.open]), new Promise<void>((r) => (timer = setTimeout(r, ms)))]);
    clearTimeout(timer);
  }
}
