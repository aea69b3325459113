-- 0014: a job claimed for dispatch whose media was still being read or fetched when the gateway died was never
-- handed to the network, yet a restart found it in `sending` like any other and marked it `unknown` ("may or may
-- not have been sent"): a media URL can take up to the call deadline to download, and a kill in that time left a
-- job that needed a human for a message that provably never went out. A claim of a media job now sets
-- `preparing`; the dispatcher clears it (conditionally: only while the job is still `sending` and `preparing`)
-- after the media is ready and before it hands the call to the session, and does not call when it cannot. A start
-- that finds a job `sending` and still `preparing` knows the network was never called: `failed`, never `unknown`
-- (src/queue/sql/recoverSending.ts). Other kinds are handed to the session right after their claim and never set
-- it. A constant default adds the column without rewriting the table.
ALTER TABLE jobs ADD COLUMN preparing boolean NOT NULL DEFAULT false;
