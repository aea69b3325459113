-- A webjs session's link (whatsapp-web.js RemoteAuth) kept in PostgreSQL, so that another node resumes it
-- without a new QR (issue 15 item 5). One row per RemoteAuth session name ("RemoteAuth-<instanceId>"): the
-- zip of the Chromium profile's required folders, as RemoteAuth builds it.
CREATE TABLE webjs_auth (
  session text PRIMARY KEY,
  data bytea NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);
-- A zip is already compressed: stored out of line uncompressed, so that reading it back in slices
-- (substring) fetches only the slice's TOAST chunks instead of the whole value each time.
ALTER TABLE webjs_auth ALTER COLUMN data SET STORAGE EXTERNAL;

-- A save in progress: the zip arrives in slices, each its own short statement (no connection is held for the
-- length of an upload), and becomes the row of webjs_auth in one statement at the end, so a reader never sees
-- half a zip and concurrent saves of one session are last-writer-wins. Parts of a save that died midway are
-- removed by a later save.
CREATE TABLE webjs_auth_parts (
  upload uuid NOT NULL,
  seq integer NOT NULL,
  session text NOT NULL,
  chunk bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (upload, seq)
);
ALTER TABLE webjs_auth_parts ALTER COLUMN chunk SET STORAGE EXTERNAL;
CREATE INDEX webjs_auth_parts_created ON webjs_auth_parts (created_at);
