-- Checkpoints of two trees (the rows, `events`, and the closed re-verdict runs, `reverdicts`,
-- each under its own origin), and the witnesses' cosignatures a checkpoint was published with.
-- The table stays a convenience and the publisher's queue: the signer and every reader trust a
-- note only once it opens with the log's key (and, with a witness policy, carries its quorum).
ALTER TABLE audit.checkpoints
    ADD COLUMN log text NOT NULL DEFAULT 'events' CHECK (log IN ('events', 'reverdicts')),
    ADD COLUMN cosignatures text;
ALTER TABLE audit.checkpoints DROP CONSTRAINT checkpoints_pkey;
ALTER TABLE audit.checkpoints ADD PRIMARY KEY (log, tree_size);
GRANT UPDATE (published, cosignatures) ON audit.checkpoints TO event_audit_writer;

-- A SECURITY DEFINER function runs with its owner's rights: it must not resolve names through
-- the caller's search_path (a caller's own schema could shadow pg_catalog's functions).
ALTER FUNCTION audit.ensure_partitions(timestamptz, integer) SET search_path = pg_catalog, pg_temp;
