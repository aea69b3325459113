/**
 * A per-instance serial executor: tasks run one at a time. The planner's decisions that assign slots
 * (acceptance, re-plan) go through one of these, so slot assignment and TTL_UNREACHABLE are decided in one
 * place without a lock in PostgreSQL. A cancel and a dispatch claim do not: each is one conditional UPDATE
 * that decides alone (src/queue/dispatch-loop.ts), so neither waits behind an acceptance batch's group commit.
 *
 * Two lanes: `runFirst` (what the dispatch lane needs serialized: its re-plans, a write-back, a job put back)
 * goes before `run` (everything else); within a lane, submission order.
 */
type Task = () => Promise<void>;

export class Serial {
  private readonly urgent: Task[] = [];
  private readonly normal: Task[] = [];
  private running = false;
  private idleWaiters: (() => void)[] = [];

  run<T>(task: () => Promise<T>): Promise<T> {
    return this.enqueue(this.normal, task);
  }

  runFirst<T>(task: () => Promise<T>): Promise<T> {
    return this.enqueue(this.urgent, task);
  }

  /** Resolves when everything submitted so far has finished. */
  idle(): Promise<void> {
    if (!this.running) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private enqueue<T>(lane: Task[], task: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      lane.push(() => task().then(resolve, reject));
      if (!this.running) void this.pump();
    });
  }

  private async pump(): Promise<void> {
    this.running = true;
    for (let next = this.urgent.shift() ?? this.normal.shift(); next; next = this.urgent.shift() ?? this.normal.shift()) {
      await next().catch(() => undefined); // the task's own promise carries its error to its caller
    }
    this.running = false;
    for (const w of this.idleWaiters.splice(0)) w();
  }
}
