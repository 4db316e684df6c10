-- Each role may do exactly what it needs.
--
-- Functions are executable by PUBLIC unless revoked: the auditor (and any other role) could
-- create partitions through audit.ensure_partitions (SECURITY DEFINER). Only the writer may.
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA audit FROM PUBLIC;
GRANT EXECUTE ON FUNCTION audit.ensure_partitions(timestamptz, integer) TO event_audit_writer;
-- The owner creates partitions, which inherit the append-only triggers.
GRANT EXECUTE ON FUNCTION audit.refuse_change() TO event_audit_owner;
-- Read by the views over the log (the latest verdict of a row).
GRANT EXECUTE ON FUNCTION audit.latest_status(text, bigint, timestamptz, text)
    TO event_audit_writer, event_audit_auditor;
-- A verify run is recorded by whoever verifies (the auditor), never by the daemon's role, which
-- could otherwise record a forged "ok".
REVOKE EXECUTE ON FUNCTION audit.record_verify_run(boolean, bigint, bigint, text, bigint, bigint, bigint, bigint, bigint, bigint, boolean)
    FROM event_audit_writer;

-- The head moves onto the link appended after it: the writer may move it (it appends the
-- links), but only onto a link that exists, follows the head and carries the head's hash and
-- tree size, never to a hash of its choosing. Checked at commit (a deferred constraint trigger),
-- so the daemon still appends the link and moves the head in one statement.
CREATE FUNCTION audit.head_on_link() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM audit.chain_links l
                   WHERE l.link_seq = NEW.link_seq AND l.hash = NEW.hash AND l.prev_hash = OLD.hash
                     AND l.tree_size = NEW.tree_size) THEN
        RAISE EXCEPTION 'chain head moves forward only onto the link appended after it (link %, with its hash and tree size)', NEW.link_seq
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NULL;
END
$$;
ALTER FUNCTION audit.head_on_link() OWNER TO event_audit_owner;
REVOKE ALL ON FUNCTION audit.head_on_link() FROM PUBLIC;
CREATE CONSTRAINT TRIGGER chain_head_on_link AFTER UPDATE ON audit.chain_head
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION audit.head_on_link();
