-- The bytes of stored media, also kept in PostgreSQL when several nodes share the database (CLUSTER_SECRET
-- set): a node that did not store a file (a request through another node, an instance moved or handed over)
-- reads it from here and keeps a copy under its own DATA_DIR/media. Deleted with the media row.
CREATE TABLE media_blobs (
  media_id text PRIMARY KEY REFERENCES media(id) ON DELETE CASCADE,
  data     bytea NOT NULL
);
-- media is compressed already: kept out of line without trying to compress it again
ALTER TABLE media_blobs ALTER COLUMN data SET STORAGE EXTERNAL;
