/**
 * What one console event stream sends at each poll (src/console/router.ts): every instance with its view and its
 * queue counts, each marked when it is not a reading of now.
 *
 * A view or a count read is asked of the node that runs the instance, which answers in milliseconds, or is given
 * VIEW_DEADLINE_MS (5 s) before the view is `stateUnknown`. A poll does not wait that long for every instance: it
 * sends what came back within FIRST_LOOK_MS, and an instance whose view is still awaited is sent as such
 * (`viewPending`: asked since when, its last status), not as the last reading left on the page as if current
 * (found in review: the console showed the previous snapshot of that instance, unmarked, for those 5 s). The read
 * stays in flight across polls (one ask at a time per instance and stream) and is used when it comes back. An
 * instance already shown unknown stays unknown while it is asked again, rather than turning "waiting" each time.
 *
 * Counts that could not be read are sent with why (`queueError`), in words of the gateway's own (never an error's
 * message, which may carry anything): before, they were a bare null, shown "—" as if there were no data.
 */
import type { InstancePort, QueueSummary } from '../actors/port.js';
import type { InstanceAdmin } from '../http/routes/admin-instances.js';
import type { Logger } from '../log.js';
import { OwnerNotAnswering, isDomainError } from '../errors.js';
import { VIEW_DEADLINE_MS, deletedSinceListed } from '../instances.js';

/** Queue counts of one instance (the queue's own tally, as GET /api/status reads it). */
export type QueueCounts = QueueSummary['counts'];

/** How long a poll waits for the instances' views and counts before it sends what it has. */
export const FIRST_LOOK_MS = 1_000;

/** One instance as the event stream sends it. */
export type ConsoleItem = Record<string, unknown> & {
  queue: QueueCounts | null;
  /** why `queue` is null although the state is known: the counts could not be read (or not yet); null otherwise */
  queueError: string | null;
  /** the view was asked at `since` and has not come back yet (its status fields are null); null otherwise */
  viewPending: { since: string; lastStatus: string | null } | null;
};

/** What the event stream sends: one `instances` event per poll. */
export interface ConsoleSnapshot {
  at: string;
  items: ConsoleItem[];
}

export interface ReadingDeps {
  instances: Pick<InstanceAdmin, 'list' | 'describe'>;
  /** the way into an instance, for its queue counts (left out: the console shows none) */
  portOf?: (instanceId: string) => Pick<InstancePort, 'ask'>;
  log?: Logger;
}

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

/** A read in flight: when it was asked, and its result once it came back. */
interface Read<T> {
  since: number;
  done: Promise<void>;
  settled: Settled<T> | null;
}

type CountsRead = { counts: QueueCounts | null } | { error: string };

function start<T>(run: () => Promise<T>): Read<T> {
  const read: Read<T> = { since: Date.now(), done: Promise.resolve(), settled: null };
  read.done = run().then(
    (value) => void (read.settled = { ok: true, value }),
    (error: unknown) => void (read.settled = { ok: false, error }),
  );
  return read;
}

/** Why counts could not be read when the failure was none of the expected ones. */
const COUNTS_FAILED = 'the gateway failed to read them (its log says why)';

/**
 * Why counts could not be read, briefly: the gateway's own words, never a secret; undefined for a failure that
 * is none of the expected ones (the caller logs it).
 */
function countsError(err: unknown): string | undefined {
  if (err instanceof OwnerNotAnswering) return `node ${err.node}, which runs it, ${err.why}`;
  if (isDomainError(err, 'INSTANCE_TIMEOUT')) return `the queue did not answer within ${VIEW_DEADLINE_MS / 1000} s`;
  if (isDomainError(err, 'INSTANCE_UNREACHABLE')) return 'its queue is not running (starting, or being handed over)';
  if (isDomainError(err, 'QUEUE_STORE_UNAVAILABLE')) {
    if (err.data.reason === 'queue_not_loaded') return 'its queue could not read its jobs from PostgreSQL at start (tried again)';
    if (err.data.reason === 'queue_loading') return 'its queue is still reading its jobs from PostgreSQL (starting)';
    if (err.data.reason === 'store_timeout') return 'PostgreSQL did not answer in time';
    if (err.data.reason === 'store_fault') return 'PostgreSQL failed the read for a reason of its own (a full disk, its files gone: see the log)';
    return 'PostgreSQL cannot be reached';
  }
  return undefined;
}

/** The readings of one event stream: call `read()` once per poll, never two at once. */
export function consoleReadings(deps: ReadingDeps): { read(): Promise<ConsoleSnapshot> } {
  const views = new Map<string, Read<Record<string, unknown>>>();
  const counts = new Map<string, Read<CountsRead>>();
  const last = new Map<string, ConsoleItem>();

  // within the deadline of the instance's view: a node that does not answer holds a read for 5 s, not a queue read's 10 s
  const readCounts = async (id: string): Promise<CountsRead> => {
    if (!deps.portOf) return { counts: null };
    try {
      return { counts: (await deps.portOf(id).ask({ type: 'queue.summary' }, VIEW_DEADLINE_MS)).counts };
    } catch (err) {
      const why = countsError(err);
      if (why !== undefined) return { error: why };
      deps.log?.warn({ err, instanceId: id }, 'console event stream: reading the queue counts failed');
      return { error: COUNTS_FAILED };
    }
  };

  const read = async (): Promise<ConsoleSnapshot> => {
    const list = await deps.instances.list();
    const ids = new Set(list.map((i) => i.id));
    for (const map of [views, counts, last]) for (const id of map.keys()) if (!ids.has(id)) map.delete(id);
    const reads = list.map((inst) => {
      let view = views.get(inst.id);
      if (!view) views.set(inst.id, (view = start(() => deps.instances.describe(inst))));
      let count = counts.get(inst.id);
      if (!count) counts.set(inst.id, (count = start(() => readCounts(inst.id))));
      return { inst, view, count };
    });
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.all(reads.flatMap((r) => [r.view.done, r.count.done])),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, FIRST_LOOK_MS);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
    const at = new Date().toISOString();
    const items = reads.flatMap(({ inst, view, count }): ConsoleItem[] => {
      const before = last.get(inst.id);
      let item: ConsoleItem;
      if (view.settled) {
        views.delete(inst.id);
        if (!view.settled.ok) {
          // deleted since the list was read: left out, as the next list leaves it out (found by the outside probe:
          // a delete at that moment failed the whole poll)
          if (deletedSinceListed(view.settled.error)) {
            for (const map of [counts, last]) map.delete(inst.id);
            return [];
          }
          // any other failed view fails the poll, as a failed list does
          throw view.settled.error;
        }
        const described = view.settled.value;
        let queue: QueueCounts | null = null;
        let queueError: string | null = null;
        // the state unknown (its node not answering): no counts either, even ones that came back meanwhile
        if (count.settled) {
          counts.delete(inst.id);
          const c = count.settled.ok ? count.settled.value : { error: countsError(count.settled.error) ?? COUNTS_FAILED };
          if ('error' in c) queueError = c.error;
          else queue = c.counts;
        } else {
          queueError = before?.queueError ?? 'no answer yet';
        }
        item = described.stateUnknown ? { ...described, queue: null, queueError: null, viewPending: null } : { ...described, queue, queueError, viewPending: null };
      } else if (before?.stateUnknown) {
        // still unknown: asked again, and not answered yet
        item = before;
      } else {
        item = {
          id: inst.id, name: inst.name, driver: inst.driver, createdAt: inst.createdAt, settings: inst.settings, phoneNumber: inst.phoneNumber,
          status: null, state: null, connected: null, browser: null, paused: null, quarantined: null, lastError: null,
          node: before?.node ?? null, stateUnknown: null, queue: null, queueError: null,
          viewPending: { since: new Date(view.since).toISOString(), lastStatus: before?.viewPending ? before.viewPending.lastStatus : typeof before?.status === 'string' ? before.status : null },
        };
      }
      last.set(inst.id, item);
      return [item];
    });
    return { at, items };
  };

  return { read };
}
