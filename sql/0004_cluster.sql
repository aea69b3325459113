-- Several gateway nodes on one PostgreSQL (issue 15). A node registers itself and renews its heartbeat; an
-- instance is owned through a lease (node, epoch, expiry) that its owner renews. Every write of the queue is
-- made under the owner's current lease (the row is read FOR SHARE in the writing transaction), so a node that
-- lost its lease can never plan or dispatch for the instance again; a takeover bumps the epoch.
CREATE TABLE nodes (
  id text PRIMARY KEY,
  url text NOT NULL,
  capacity integer NOT NULL,
  -- sha256 of CLUSTER_SECRET (hex), null without one: nodes with different secrets do not join each other
  secret_hash text,
  started_at timestamptz NOT NULL DEFAULT now(),
  heartbeat_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE instance_leases (
  instance_id uuid PRIMARY KEY REFERENCES instances (id) ON DELETE CASCADE,
  node_id text NOT NULL,
  epoch bigint NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX instance_leases_node ON instance_leases (node_id);

-- an operator's placement (POST /admin/v1/instances/:id/move): wins over the hash while that node is live
CREATE TABLE instance_placement (
  instance_id uuid PRIMARY KEY REFERENCES instances (id) ON DELETE CASCADE,
  node_id text NOT NULL
);
