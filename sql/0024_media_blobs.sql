-- The bytes of stored media, also kept in PostgreSQL when several nodes share the database (CLUSTER_SECRET
-- set): a node that did not store a file (a request through another node, an instance moved or handed over)
-- reads it from here and keeps a copy under its own DATA_DIR/media. In parts of 1 MiB: a statement moves one
-- part, so no statement of a 16 MiB file nears the store's deadline nor holds a node's event loop. Deleted
-- with the media row.
CREATE TABLE media_blobs (
  media_id text NOT NULL REFERENCES media(id) ON DELETE CASCADE,
  part     integer NOT NULL CHECK (part >= 0),
  data     bytea NOT NULL,
  PRIMARY KEY (media_id, part)
);
-- media is compressed already: kept out of line without trying to compress it again
ALTER TABLE media_blobs ALTER COLUMN data SET STORAGE EXTERNAL;
