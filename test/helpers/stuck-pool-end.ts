/**
 * Preloaded into a gateway process a test starts (`--import`): a pg pool's end() closes its connections as
 * always, but the promise it gives back never settles. A graceful stop then waits, in its database stage, on a
 * promise that nothing will ever settle, with nothing left that keeps node's event loop alive: what
 * test/e2e/hard-stop.test.ts needs to show that such a stop still ends with exit code 1, not 0.
 */
import pg from 'pg';

const end = pg.Pool.prototype.end;
pg.Pool.prototype.end = function stuckEnd(this: pg.Pool): Promise<void> {
  end.call(this, () => undefined);
  return new Promise<void>(() => undefined);
};
