/**
 * The dispatcher: the child `dispatcher` of an instance actor. It sends a job the planner claimed (committed
 * as `sending`) at most once: it prepares the call (fetching media first: a failure there is provably not
 * sent), hands the prepared call to the session (the only holder of the driver; `CALL` through the parent)
 * under the call deadline, and answers the planner with the outcome (src/queue/dispatch.ts classifies it).
 * A job id it has handed to the session is never called again while it runs: a repeated `DISPATCH` is
 * answered `unknown` without a call (a call that never reached the network does not count).
 */
import { fromCallback, type CallbackActorLogic } from 'xstate';
import type { Clock } from '../clock.js';
import { dispatchJob, notSendableAt, type DispatchDeps, type MediaResolver } from '../queue/dispatch.js';
import { neverReachedNetwork } from '../queue/outcome.js';
import type { DispatchOutcome } from '../queue/types.js';
import type { CallOutcome } from './call.js';
import { answer, type Replies } from './local-port.js';
import { okReply } from './port.js';
import type { ChildEvent, DispatchEnvelope } from '../../machines/instance.types.js';

export interface DispatcherInput {
  instanceId: string;
}

export interface DispatcherDeps {
  clock: Clock;
  callTimeoutMs: number;
  resolveMedia: MediaResolver;
  /** src/queue/dispatch.ts DispatchDeps.startCall */
  startCall: DispatchDeps['startCall'];
  replies: Replies;
}

const LATE: CallOutcome = { kind: 'call_failed', message: 'the session did not answer within the call deadline' };
const REPEATED: DispatchOutcome = { kind: 'unknown', unknownReason: 'the job was already handed to the network once; not sent again' };
/** Job ids remembered against a repeated dispatch (far more than one instance sends between restarts of its actor). */
const REMEMBERED = 10_000;

export function createDispatcherLogic(deps: DispatcherDeps): CallbackActorLogic<DispatchEnvelope, DispatcherInput, ChildEvent> {
  return fromCallback<DispatchEnvelope, DispatcherInput, ChildEvent>(({ receive, sendBack, system }) => {
    const taken = new Set<string>();
    receive((event) => {
      if (taken.has(event.job.id)) return answer(system, event, okReply(REPEATED));
      taken.add(event.job.id);
      if (taken.size > REMEMBERED) taken.delete(taken.values().next().value as string);
      void dispatchJob(event.job, {
        clock: deps.clock,
        callTimeoutMs: deps.callTimeoutMs,
        resolveMedia: deps.resolveMedia,
        startCall: deps.startCall,
        notSendable: (at) => notSendableAt(event.job, event.quietHours, at),
        perform: (prepared, deadlineMs) =>
          deps.replies
            .request((address) => (sendBack({ type: 'CALL', ...address, prepared }), true), deadlineMs, () => new Error('late'))
            .then((r) => (r.ok ? (r.value as CallOutcome) : LATE), () => LATE),
      }).then((outcome) => {
        // never reached the network (the same test the planner uses to put the job back): it may be handed over again
        if (neverReachedNetwork(outcome)) taken.delete(event.job.id);
        answer(system, event, okReply(outcome));
      });
    });
  });
}
