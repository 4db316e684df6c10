-- Append-only: the tables belong to event_audit_owner, the writer may only INSERT (and SELECT),
-- and triggers refuse UPDATE, DELETE and TRUNCATE of the log for everyone short of a superuser
-- who disables them (which `event-audit verify` then detects).
CREATE FUNCTION audit.refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit log is append-only: % on %.% refused', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END
$$;

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['events', 'event_ids', 'id_findings', 'chain_links'] LOOP
        EXECUTE format('CREATE TRIGGER %I BEFORE UPDATE OR DELETE ON audit.%I FOR EACH ROW EXECUTE FUNCTION audit.refuse_change()', t || '_no_change', t);
        EXECUTE format('CREATE TRIGGER %I BEFORE TRUNCATE ON audit.%I FOR EACH STATEMENT EXECUTE FUNCTION audit.refuse_change()', t || '_no_truncate', t);
    END LOOP;
END
$$;
CREATE TRIGGER no_truncate BEFORE TRUNCATE ON audit.events_default FOR EACH STATEMENT EXECUTE FUNCTION audit.refuse_change();
SELECT audit.ensure_partitions(now() - interval '1 month', 4);

-- The chain head moves forward only.
CREATE FUNCTION audit.head_forward() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP <> 'UPDATE' OR NEW.link_seq <> OLD.link_seq + 1 THEN
        RAISE EXCEPTION 'chain head moves one link forward only' USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER chain_head_forward BEFORE UPDATE OR DELETE ON audit.chain_head FOR EACH ROW EXECUTE FUNCTION audit.head_forward();
CREATE TRIGGER chain_head_no_truncate BEFORE TRUNCATE ON audit.chain_head FOR EACH STATEMENT EXECUTE FUNCTION audit.refuse_change();

ALTER SCHEMA audit OWNER TO event_audit_owner;
ALTER TABLE audit.events OWNER TO event_audit_owner;
ALTER TABLE audit.events_default OWNER TO event_audit_owner;
DO $$
DECLARE p text;
BEGIN
    FOR p IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'audit.events'::regclass LOOP
        EXECUTE format('ALTER TABLE audit.%I OWNER TO event_audit_owner', p);
    END LOOP;
END
$$;
ALTER TABLE audit.event_ids OWNER TO event_audit_owner;
ALTER TABLE audit.id_findings OWNER TO event_audit_owner;
ALTER TABLE audit.chain_links OWNER TO event_audit_owner;
ALTER TABLE audit.chain_head OWNER TO event_audit_owner;
ALTER TABLE audit.verify_runs OWNER TO event_audit_owner;
ALTER SEQUENCE audit.batch_id_seq OWNER TO event_audit_owner;
ALTER FUNCTION audit.ensure_partitions(timestamptz, integer) OWNER TO event_audit_owner;
-- Partitions are created by the owner's function on the writer's behalf.
ALTER FUNCTION audit.ensure_partitions(timestamptz, integer) SECURITY DEFINER;

REVOKE ALL ON ALL TABLES IN SCHEMA audit FROM PUBLIC;
GRANT USAGE ON SCHEMA audit TO event_audit_writer, event_audit_auditor;
GRANT SELECT, INSERT ON audit.events, audit.event_ids, audit.id_findings, audit.chain_links, audit.verify_runs TO event_audit_writer;
GRANT SELECT, UPDATE ON audit.chain_head TO event_audit_writer;
GRANT USAGE ON SEQUENCE audit.batch_id_seq, audit.verify_runs_id_seq TO event_audit_writer;
GRANT EXECUTE ON FUNCTION audit.ensure_partitions(timestamptz, integer) TO event_audit_writer;
GRANT SELECT ON ALL TABLES IN SCHEMA audit TO event_audit_auditor;
