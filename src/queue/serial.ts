/**
 * A per-instance serial executor: tasks run one after another in submission order. The planner's decisions
 * (acceptance, re-plan, cancel, dispatch claim) go through one of these, so slot assignment and
 * TTL_UNREACHABLE are decided in one place without a lock in PostgreSQL.
 */
export class Serial {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const result = this.tail.then(task, task);
    this.tail = result.catch(() => undefined);
    return result;
  }

  /** Resolves when everything submitted so far has finished. */
  idle(): Promise<void> {
    return this.tail.then(() => undefined);
  }
}
