-- A v1 job whose caller waits for its outcome in this process (send-message/send-media without async mode).
-- When that process dies, the caller gets no answer and resends (SPEC.md v1 rule 1): the job it left behind
-- must never go out after that, so the next start of the instance's queue expires it. Cleared when the
-- caller was answered with the job's id (504 QUEUE_WAIT_TIMEOUT: "poll the job, do not resend").
ALTER TABLE jobs ADD COLUMN caller_boot text;
CREATE INDEX jobs_caller_boot ON jobs (instance_id) WHERE caller_boot IS NOT NULL;
