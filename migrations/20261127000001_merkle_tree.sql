-- The Merkle tree over every row (RFC 6962 hashing; see src/audit/tlog.rs), in log order: link
-- order, then the batch's row order (stream, stream_seq, published_at).
--   chain_links.tree_size / tree_root  the tree after the link's batch
--   chain_links.version                1: hash = SHA-256(prev ‖ seq ‖ batch ‖ count ‖ digest)
--                                      2: the same ‖ tree_size ‖ tree_root (the link covers the root)
--   chain_head.tree_size / frontier    the tree's right edge (its perfect subtrees' roots,
--                                      largest first, concatenated): appends in O(log n)
--   tree_nodes                         the roots of the perfect subtrees of height 8, 16, 24, …
--                                      (one per 256 leaves), so a proof reads O(log n) hashes
--   checkpoints                        a copy of each signed checkpoint (a convenience: verify
--                                      trusts only the witness)
ALTER TABLE audit.chain_links
    ADD COLUMN tree_size bigint,
    ADD COLUMN tree_root bytea,
    ADD COLUMN version smallint NOT NULL DEFAULT 1;
CREATE INDEX chain_links_tree_size_idx ON audit.chain_links (tree_size);

ALTER TABLE audit.chain_head
    ADD COLUMN tree_size bigint NOT NULL DEFAULT 0,
    ADD COLUMN frontier bytea NOT NULL DEFAULT '';

CREATE TABLE audit.tree_nodes (
    height  smallint NOT NULL CHECK (height > 0 AND height % 8 = 0),
    idx     bigint   NOT NULL,
    hash    bytea    NOT NULL,
    PRIMARY KEY (height, idx)
);

CREATE TABLE audit.checkpoints (
    tree_size   bigint      PRIMARY KEY,
    note        text        NOT NULL,
    signed_at   timestamptz NOT NULL DEFAULT now(),
    published   boolean     NOT NULL DEFAULT false
);

-- Backfill: the tree over the rows already in the log, in link order. Old links keep their
-- version 1 hash; they gain the tree's size and root.
DO $$
DECLARE
    l record;
    r record;
    front bytea[] := '{}';
    size bigint := 0;
    h bytea;
    s bigint;
    lvl int;
    i int;
    root bytea;
    fb bytea := '';
BEGIN
    ALTER TABLE audit.chain_links DISABLE TRIGGER chain_links_no_change;
    FOR l IN SELECT link_seq, batch_id FROM audit.chain_links ORDER BY link_seq LOOP
        FOR r IN SELECT e.row_hash FROM audit.events e WHERE e.batch_id = l.batch_id
                 ORDER BY e.stream COLLATE "C", e.stream_seq, e.published_at LOOP
            h := sha256('\x00'::bytea || r.row_hash);
            s := size;
            lvl := 0;
            WHILE s % 2 = 1 LOOP
                h := sha256('\x01'::bytea || front[array_length(front, 1)] || h);
                front := front[1:array_length(front, 1) - 1];
                s := s / 2;
                lvl := lvl + 1;
                IF lvl % 8 = 0 THEN
                    INSERT INTO audit.tree_nodes (height, idx, hash) VALUES (lvl, size >> lvl, h);
                END IF;
            END LOOP;
            front := front || h;
            size := size + 1;
        END LOOP;
        root := front[array_length(front, 1)];
        IF root IS NULL THEN
            root := sha256(''::bytea);
        ELSE
            FOR i IN REVERSE array_length(front, 1) - 1 .. 1 LOOP
                root := sha256('\x01'::bytea || front[i] || root);
            END LOOP;
        END IF;
        UPDATE audit.chain_links SET tree_size = size, tree_root = root WHERE link_seq = l.link_seq;
    END LOOP;
    ALTER TABLE audit.chain_links ENABLE TRIGGER chain_links_no_change;
    IF size > 0 THEN
        FOREACH h IN ARRAY front LOOP
            fb := fb || h;
        END LOOP;
        ALTER TABLE audit.chain_head DISABLE TRIGGER chain_head_forward;
        UPDATE audit.chain_head SET tree_size = size, frontier = fb WHERE id;
        ALTER TABLE audit.chain_head ENABLE TRIGGER chain_head_forward;
    END IF;
END
$$;

-- The head moves one link forward at a time, and its tree never shrinks.
CREATE OR REPLACE FUNCTION audit.head_forward() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'UPDATE' OR NEW.link_seq <> OLD.link_seq + 1 OR NEW.tree_size < OLD.tree_size THEN
        RAISE EXCEPTION 'chain head moves one link forward only' USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$$;

-- Append-only, like the rest of the log.
CREATE TRIGGER tree_nodes_no_change BEFORE UPDATE OR DELETE ON audit.tree_nodes
    FOR EACH ROW EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER tree_nodes_no_truncate BEFORE TRUNCATE ON audit.tree_nodes
    FOR EACH STATEMENT EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER checkpoints_no_delete BEFORE DELETE ON audit.checkpoints
    FOR EACH ROW EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER checkpoints_no_truncate BEFORE TRUNCATE ON audit.checkpoints
    FOR EACH STATEMENT EXECUTE FUNCTION audit.refuse_change();

ALTER TABLE audit.tree_nodes OWNER TO event_audit_owner;
ALTER TABLE audit.checkpoints OWNER TO event_audit_owner;
REVOKE ALL ON audit.tree_nodes, audit.checkpoints FROM PUBLIC;
GRANT SELECT, INSERT ON audit.tree_nodes TO event_audit_writer;
-- The writer marks a stored checkpoint published (and nothing else: see the trigger).
GRANT SELECT, INSERT, UPDATE (published) ON audit.checkpoints TO event_audit_writer;
GRANT SELECT ON audit.tree_nodes, audit.checkpoints TO event_audit_auditor;
