-- The account index (event-audit-account-index/1; docs/internals.md, "The account index"): from
-- each identifier's label (its VRF output under the log's index key, never the identifier) to
-- the leaves about it, committed by a root that a row of the log itself records at each update.
--
-- audit.index_versions  one row per update: the log size it covers (leaves [0, version)), the
--                       record's number and leaf (stream event-audit.index), the root, how many
--                       labels, and the update's (leaf, label) pairs in leaf order (`delta`: the
--                       index's tile, what `verify` rebuilds from and a mirror copies).
-- audit.index_entries   each label's value (leaf count and fold) from the version it changed at,
--                       with the leaves it gained at that version.
-- audit.index_nodes     the tree's nodes at depths 0, 8 and 16, from the version they changed at.
-- audit.index_labels    each identifier's label and VRF proof, found by the identifier's keyed
--                       hash (SHA-256(pepper || identifier), as audit.erased_subjects): how
--                       `prove --complete` finds a label without the key, and how `verify`
--                       checks that a label belongs to the identifiers of its rows. An erasure
--                       deletes the person's rows here: the label then links to no number but
--                       through the key.
-- All but index_labels are append-only; the daemon (writer) writes them, auditors read them.
CREATE TABLE audit.index_versions (
    version     bigint      PRIMARY KEY CHECK (version >= 0),
    seq         bigint      NOT NULL UNIQUE CHECK (seq >= 1),
    root        bytea       NOT NULL CHECK (octet_length(root) = 32),
    labels      bigint      NOT NULL CHECK (labels >= 0),
    record_leaf bigint      NOT NULL CHECK (record_leaf >= version),
    delta       bytea       NOT NULL,
    made_at     timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE audit.index_entries (
    label   bytea    NOT NULL CHECK (octet_length(label) = 32),
    version bigint   NOT NULL,
    count   bigint   NOT NULL CHECK (count > 0),
    acc     bytea    NOT NULL CHECK (octet_length(acc) = 32),
    leaves  bigint[] NOT NULL,
    PRIMARY KEY (label, version)
);
CREATE TABLE audit.index_nodes (
    depth   smallint NOT NULL CHECK (depth IN (0, 8, 16)),
    prefix  integer  NOT NULL CHECK (prefix BETWEEN 0 AND 65535),
    version bigint   NOT NULL,
    hash    bytea    NOT NULL CHECK (octet_length(hash) = 32),
    count   bigint   NOT NULL CHECK (count >= 0),
    PRIMARY KEY (depth, prefix, version)
);
CREATE TABLE audit.index_labels (
    subject bytea PRIMARY KEY CHECK (octet_length(subject) = 32),
    label   bytea NOT NULL UNIQUE CHECK (octet_length(label) = 32),
    proof   bytea NOT NULL CHECK (octet_length(proof) = 80)
);

ALTER TABLE audit.index_versions OWNER TO event_audit_owner;
ALTER TABLE audit.index_entries OWNER TO event_audit_owner;
ALTER TABLE audit.index_nodes OWNER TO event_audit_owner;
ALTER TABLE audit.index_labels OWNER TO event_audit_owner;
REVOKE ALL ON audit.index_versions, audit.index_entries, audit.index_nodes, audit.index_labels
    FROM PUBLIC;
GRANT SELECT, INSERT ON audit.index_versions, audit.index_entries, audit.index_nodes,
    audit.index_labels TO event_audit_writer;
GRANT SELECT ON audit.index_versions, audit.index_entries, audit.index_nodes,
    audit.index_labels TO event_audit_auditor, event_audit_eraser;
GRANT DELETE ON audit.index_labels TO event_audit_eraser;
-- `prove --complete` finds a label by the identifier's keyed hash, as the auditor too.
GRANT SELECT ON audit.erasure_pepper TO event_audit_auditor;

CREATE TRIGGER index_versions_no_change BEFORE UPDATE OR DELETE ON audit.index_versions
    FOR EACH ROW EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER index_entries_no_change BEFORE UPDATE OR DELETE ON audit.index_entries
    FOR EACH ROW EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER index_nodes_no_change BEFORE UPDATE OR DELETE ON audit.index_nodes
    FOR EACH ROW EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER index_labels_no_update BEFORE UPDATE ON audit.index_labels
    FOR EACH ROW EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER index_versions_no_truncate BEFORE TRUNCATE ON audit.index_versions
    FOR EACH STATEMENT EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER index_entries_no_truncate BEFORE TRUNCATE ON audit.index_entries
    FOR EACH STATEMENT EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER index_nodes_no_truncate BEFORE TRUNCATE ON audit.index_nodes
    FOR EACH STATEMENT EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER index_labels_no_truncate BEFORE TRUNCATE ON audit.index_labels
    FOR EACH STATEMENT EXECUTE FUNCTION audit.refuse_change();
