-- Erasure of personal data (`event-audit erase`), as a role of its own.
--   event_audit_eraser  may set a row's personal columns NULL (its raw message to no bytes) and
--                       remove what other tables keep of them; it appends the erasure record
--                       through the chain as the writer appends a batch (it is a member of the
--                       writer role for that). Neither the writer nor the auditor is a member
--                       of it. GRANT event_audit_eraser TO the data-protection officer's login.
DO $$
BEGIN
    CREATE ROLE event_audit_eraser NOLOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
    NULL;
END
$$;
DO $$
BEGIN
    IF NOT pg_has_role('event_audit_eraser', 'event_audit_writer', 'MEMBER') THEN
        GRANT event_audit_writer TO event_audit_eraser;
    END IF;
EXCEPTION WHEN OTHERS THEN
    -- Another database's migration granted it at the same moment (roles are cluster-wide).
    IF NOT pg_has_role('event_audit_eraser', 'event_audit_writer', 'MEMBER') THEN
        RAISE;
    END IF;
END
$$;

-- The index of erasures: each one's number (its record's stream sequence in the log's stream
-- `event-audit.erasures`), when, why, how many rows, and its record's row hash. The record
-- itself is a row of audit.events, in the chain and the tree; `verify` accepts an erasure only
-- through that row, and reports an entry here without it as a break.
CREATE TABLE audit.erasures (
    erasure_id  bigint      PRIMARY KEY,
    erased_at   timestamptz NOT NULL,
    reason      text        NOT NULL,
    selector    text        NOT NULL,   -- `account` or `stream S seq A..B`, never the account number
    rows        integer     NOT NULL,
    row_hash    bytea       NOT NULL
);
ALTER TABLE audit.erasures OWNER TO event_audit_owner;
REVOKE ALL ON audit.erasures FROM PUBLIC;
GRANT SELECT, INSERT ON audit.erasures TO event_audit_eraser;
GRANT SELECT ON audit.erasures TO event_audit_auditor;
CREATE TRIGGER erasures_no_change BEFORE UPDATE OR DELETE ON audit.erasures
    FOR EACH ROW EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER erasures_no_truncate BEFORE TRUNCATE ON audit.erasures
    FOR EACH STATEMENT EXECUTE FUNCTION audit.refuse_change();

-- audit.events stays append-only, but for one change by the eraser: the personal columns set
-- NULL (raw to no bytes), every other column unchanged.
CREATE FUNCTION audit.events_erase_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND pg_has_role(current_user, 'event_audit_eraser', 'MEMBER')
       AND NEW.raw = '\x'::bytea AND NEW.salt IS NULL AND NEW.payload IS NULL
       AND NEW.headers IS NULL AND NEW.event_id IS NULL AND NEW.account_number IS NULL
       AND NEW.errors IS NULL
       AND (NEW.stream, NEW.stream_seq, NEW.published_at, NEW.received_at, NEW.subject,
            NEW.delivery_count, NEW.envelope, NEW.event_type, NEW.event_version, NEW.status,
            NEW.unknown_fields, NEW.occurred_at, NEW.payload_error, NEW.catalogue,
            NEW.commitment, NEW.batch_id, NEW.row_hash)
           IS NOT DISTINCT FROM
           (OLD.stream, OLD.stream_seq, OLD.published_at, OLD.received_at, OLD.subject,
            OLD.delivery_count, OLD.envelope, OLD.event_type, OLD.event_version, OLD.status,
            OLD.unknown_fields, OLD.occurred_at, OLD.payload_error, OLD.catalogue,
            OLD.commitment, OLD.batch_id, OLD.row_hash) THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit log is append-only: % on %.% refused (only the eraser role may erase a row''s personal data, and change nothing else)', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END
$$;
ALTER FUNCTION audit.events_erase_only() OWNER TO event_audit_owner;
REVOKE ALL ON FUNCTION audit.events_erase_only() FROM PUBLIC;
DROP TRIGGER events_no_change ON audit.events;
CREATE TRIGGER events_no_change BEFORE UPDATE OR DELETE ON audit.events
    FOR EACH ROW EXECUTE FUNCTION audit.events_erase_only();
GRANT UPDATE (raw, salt, payload, headers, event_id, account_number, errors) ON audit.events
    TO event_audit_eraser;

-- The envelope-id claims (a digest of the id, not evidence: `verify` recomputes findings from
-- the rows) and findings (the id's text) of erased rows go.
CREATE FUNCTION audit.delete_by_eraser_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND pg_has_role(current_user, 'event_audit_eraser', 'MEMBER') THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'audit log is append-only: % on %.% refused', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END
$$;
ALTER FUNCTION audit.delete_by_eraser_only() OWNER TO event_audit_owner;
REVOKE ALL ON FUNCTION audit.delete_by_eraser_only() FROM PUBLIC;
DROP TRIGGER event_claims_no_change ON audit.event_claims;
CREATE TRIGGER event_claims_no_change BEFORE UPDATE OR DELETE ON audit.event_claims
    FOR EACH ROW EXECUTE FUNCTION audit.delete_by_eraser_only();
DROP TRIGGER id_findings_no_change ON audit.id_findings;
CREATE TRIGGER id_findings_no_change BEFORE UPDATE OR DELETE ON audit.id_findings
    FOR EACH ROW EXECUTE FUNCTION audit.delete_by_eraser_only();
GRANT DELETE ON audit.event_claims, audit.id_findings TO event_audit_eraser;

-- Reconciliation keeps account numbers, envelope ids and details per account; a batch its
-- members' account numbers.
GRANT UPDATE (external_account_number, platform_account_number, event_id, event_identifier, detail)
    ON audit.reconcile_results TO event_audit_eraser;
GRANT UPDATE (external_id) ON audit.batch_members TO event_audit_eraser;
