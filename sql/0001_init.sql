-- 0001: the whole initial schema. Later migrations extend it; none rewrites it.
-- Column defaults of `instances` are SPEC.md's "Default, existing instances" (no throttling, queue off);
-- the operator API applies "Default, new instances" explicitly when it creates one (src/store/instances.ts).

CREATE TABLE instances (
  id                  uuid PRIMARY KEY,
  name                text NOT NULL UNIQUE CHECK (name ~ '^[A-Za-z0-9-]{1,40}$'),
  driver              text NOT NULL CHECK (driver IN ('sandbox', 'webjs')),
  phone_number        text,
  created_at          timestamptz NOT NULL DEFAULT now(),
  -- operator settings (SPEC.md "Instance settings")
  max_per_hour        integer CHECK (max_per_hour IS NULL OR max_per_hour >= 0),
  max_per_24h         integer CHECK (max_per_24h IS NULL OR max_per_24h >= 0),
  min_delay_ms        integer NOT NULL DEFAULT 1500 CHECK (min_delay_ms >= 0),
  max_delay_ms        integer NOT NULL DEFAULT 3000 CHECK (max_delay_ms >= min_delay_ms),
  quiet_hours         jsonb,             -- {start:'HH:MM', end:'HH:MM', tz:'Area/City'} or null
  default_ttl_seconds integer NOT NULL DEFAULT 86400 CHECK (default_ttl_seconds BETWEEN 60 AND 2592000),
  legacy_queue_mode   text NOT NULL DEFAULT 'sync' CHECK (legacy_queue_mode IN ('sync', 'async')),
  queue_enabled       boolean NOT NULL DEFAULT false,
  store_incoming_media boolean NOT NULL DEFAULT false,
  -- planner state: persisted so a restart keeps spacing and epochs
  last_dispatch_at    timestamptz,
  plan_epoch          bigint NOT NULL DEFAULT 0
);

CREATE TABLE api_keys (
  id           bigserial PRIMARY KEY,
  instance_id  uuid NOT NULL REFERENCES instances(id) ON DELETE CASCADE,
  -- sha256 of the whole key; the key itself is never stored
  key_hash     bytea NOT NULL UNIQUE,
  -- first characters for operators to tell keys apart (wapi_<name>_abcd…), never enough to use
  key_hint     text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  revoked_at   timestamptz
);
CREATE INDEX api_keys_instance ON api_keys (instance_id);

-- Send jobs. PostgreSQL is the truth for job state; transitions are conditional updates (WHERE state = from).
CREATE TABLE jobs (
  id                  text PRIMARY KEY CHECK (id LIKE 'wq\_%'),
  seq                 bigserial NOT NULL UNIQUE,      -- arrival order
  instance_id         uuid NOT NULL REFERENCES instances(id) ON DELETE CASCADE,
  state               text NOT NULL CHECK (state IN ('queued','scheduled','sending','sent','failed','unknown','cancelled','expired')),
  kind                text NOT NULL,
  origin_route        text NOT NULL,
  chat_id             text,
  phone               text,
  payload             jsonb NOT NULL,
  payload_hash        text NOT NULL,
  idempotency_key     text,
  priority            smallint NOT NULL CHECK (priority BETWEEN 1 AND 9),
  not_before          timestamptz,
  queued_at           timestamptz NOT NULL,
  scheduled_at        timestamptz,
  dispatched_at       timestamptz,
  terminal_at         timestamptz,
  expires_at          timestamptz NOT NULL,
  attempts            integer NOT NULL DEFAULT 0,
  delivery_confidence text CHECK (delivery_confidence IN ('confirmed','assumed','unknown')),
  message_id          text,
  result_code         text,
  error_message       text,
  unknown_reason      text,
  previous_job_id     text,
  plan_epoch          bigint NOT NULL DEFAULT 0
);
CREATE INDEX jobs_waiting ON jobs (instance_id, priority DESC, seq) WHERE state IN ('queued','scheduled');
CREATE INDEX jobs_due ON jobs (scheduled_at) WHERE state = 'scheduled';
CREATE INDEX jobs_instance_state ON jobs (instance_id, state, seq);
CREATE INDEX jobs_terminal ON jobs (instance_id, terminal_at) WHERE terminal_at IS NOT NULL;

-- Idempotency keys, per instance, remembered 7 days (a sweeper deletes older rows).
CREATE TABLE idempotency_keys (
  instance_id  uuid NOT NULL REFERENCES instances(id) ON DELETE CASCADE,
  key          text NOT NULL,
  job_id       text NOT NULL,
  payload_hash text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (instance_id, key)
);
CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at);

-- Dispatch history: one row per message that went to the network and counts against the sliding windows
-- (sent, sending, unknown). A dispatch that ended `failed` is removed. Sends made while the queue was
-- memory-degraded are written back here on recovery (job_id null).
CREATE TABLE dispatches (
  id            bigserial PRIMARY KEY,
  instance_id   uuid NOT NULL REFERENCES instances(id) ON DELETE CASCADE,
  job_id        text,
  dispatched_at timestamptz NOT NULL
);
CREATE INDEX dispatches_window ON dispatches (instance_id, dispatched_at);
CREATE UNIQUE INDEX dispatches_job ON dispatches (job_id) WHERE job_id IS NOT NULL;

-- Webhook configuration, one receiver per instance.
CREATE TABLE webhooks (
  instance_id   uuid PRIMARY KEY REFERENCES instances(id) ON DELETE CASCADE,
  url           text NOT NULL,
  secret        text NOT NULL,
  events        text[] NOT NULL DEFAULT ARRAY['message','ready','disconnected','instance_restarting','test'],
  allow_private boolean NOT NULL DEFAULT false,
  enabled       boolean NOT NULL DEFAULT true,
  updated_at    timestamptz NOT NULL DEFAULT now()
);

-- Outbox: every event is written here first (in the transaction of the change that caused it), then delivered.
CREATE TABLE outbox (
  id              bigserial PRIMARY KEY,
  event_id        text NOT NULL UNIQUE CHECK (event_id LIKE 'ev\_%'),
  instance_id     uuid NOT NULL REFERENCES instances(id) ON DELETE CASCADE,
  event           text NOT NULL,
  body            text NOT NULL,          -- the exact JSON envelope that is signed and sent
  created_at      timestamptz NOT NULL DEFAULT now(),
  state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending','delivered','failed')),
  attempts        integer NOT NULL DEFAULT 0,
  max_attempts    integer NOT NULL DEFAULT 3,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  last_status     integer,
  last_error      text,
  delivered_at    timestamptz
);
CREATE INDEX outbox_pending ON outbox (instance_id, id) WHERE state = 'pending';

CREATE TABLE webhook_attempts (
  id          bigserial PRIMARY KEY,
  outbox_id   bigint NOT NULL REFERENCES outbox(id) ON DELETE CASCADE,
  attempt     integer NOT NULL,
  at          timestamptz NOT NULL DEFAULT now(),
  status      integer,
  error       text,
  duration_ms integer NOT NULL
);
CREATE INDEX webhook_attempts_outbox ON webhook_attempts (outbox_id);

-- Media index. Files live under DATA_DIR/media/<instance>/<id>, named by id only.
CREATE TABLE media (
  id          text PRIMARY KEY CHECK (id LIKE 'md\_%'),
  instance_id uuid NOT NULL REFERENCES instances(id) ON DELETE CASCADE,
  origin      text NOT NULL CHECK (origin IN ('upload','incoming')),
  message_id  text,
  mimetype    text NOT NULL,
  filename    text,
  size        bigint NOT NULL,
  sha256      text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  deleted_at  timestamptz
);
CREATE INDEX media_instance_age ON media (instance_id, created_at) WHERE deleted_at IS NULL;
CREATE INDEX media_expiry ON media (expires_at) WHERE deleted_at IS NULL;
CREATE INDEX media_message ON media (instance_id, message_id) WHERE message_id IS NOT NULL;

-- Incoming-message statistics for /api/status data.messages (sent/failed come from jobs).
CREATE TABLE inbound_messages (
  instance_id uuid NOT NULL REFERENCES instances(id) ON DELETE CASCADE,
  message_id  text NOT NULL,
  received_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (instance_id, message_id)
);
CREATE INDEX inbound_messages_age ON inbound_messages (instance_id, received_at);
