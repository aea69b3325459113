/**
 * The queue's store access for code outside src/queue (the routes, housekeeping): the job record and the
 * queries they use. Inside src/queue each query is imported from its own file under ./sql/.
 */
export type { Job, JobRecord, JobState, NewJob, QueueCounts, TransitionFields } from './job.js';
export { getJob } from './sql/getJob.js';
export { findByIdempotencyKey } from './sql/findByIdempotencyKeys.js';
export { listJobs, type ListJobsOptions } from './sql/listJobs.js';
export { queueCounts } from './sql/queueCounts.js';
export { pruneIdempotencyKeys } from './sql/pruneIdempotencyKeys.js';
export { releaseSyncCaller } from './sql/releaseSyncCaller.js';
export { transitionJob } from './sql/transitionJob.js';
