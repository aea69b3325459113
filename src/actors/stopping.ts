/**
 * What an actor leaves running when it stops: a callback actor's cleanup cannot be awaited, so the work it
 * started (a session's destroy, a queue's last write) is kept here per instance until it ends. `settled(id)`
 * and `settledAll()` wait for it (a graceful stop, a hand-over, the next session of the same instance).
 */
export class Stopping {
  private readonly running = new Map<string, Promise<void>>();

  /** Keep `done` for the instance until it ends (a later one for the same instance replaces it). */
  track(instanceId: string, done: Promise<void>): void {
    this.running.set(instanceId, done);
    void done.then(() => {
      if (this.running.get(instanceId) === done) this.running.delete(instanceId);
    });
  }

  settled(instanceId: string): Promise<void> {
    return this.running.get(instanceId) ?? Promise.resolve();
  }

  async settledAll(): Promise<void> {
    await Promise.all([...this.running.values()]);
  }
}
