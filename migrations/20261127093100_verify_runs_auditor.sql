-- `verify` runs as any reader, the auditor role included: it records its result through this
-- narrow function (owned by the owner, SECURITY DEFINER), which only appends a run. Nobody but
-- the owner writes audit.verify_runs directly any more. The run also records how long it took,
-- every break counted, the gaps found by kind (NULL when completeness was not checked) and
-- whether the witnessed checkpoints held (NULL when not checked), for the daemon's metrics.
ALTER TABLE audit.verify_runs
    ADD COLUMN breaks       bigint,
    ADD COLUMN duration_ms  bigint,
    ADD COLUMN gaps_purged  bigint,
    ADD COLUMN gaps_deleted bigint,
    ADD COLUMN gaps_missing bigint,
    ADD COLUMN gaps_pending bigint,
    ADD COLUMN witness_ok   boolean;

CREATE FUNCTION audit.record_verify_run(
    p_ok boolean, p_links bigint, p_rows bigint, p_first_break text, p_breaks bigint,
    p_duration_ms bigint, p_gaps_purged bigint, p_gaps_deleted bigint, p_gaps_missing bigint,
    p_gaps_pending bigint, p_witness_ok boolean) RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
    INSERT INTO audit.verify_runs (ok, links, rows, first_break, breaks, duration_ms,
                                   gaps_purged, gaps_deleted, gaps_missing, gaps_pending, witness_ok)
    VALUES (p_ok, p_links, p_rows, left(p_first_break, 2000), p_breaks, p_duration_ms,
            p_gaps_purged, p_gaps_deleted, p_gaps_missing, p_gaps_pending, p_witness_ok)
    RETURNING id
$$;
ALTER FUNCTION audit.record_verify_run(boolean, bigint, bigint, text, bigint, bigint, bigint, bigint, bigint, bigint, boolean) OWNER TO event_audit_owner;
REVOKE ALL ON FUNCTION audit.record_verify_run(boolean, bigint, bigint, text, bigint, bigint, bigint, bigint, bigint, bigint, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION audit.record_verify_run(boolean, bigint, bigint, text, bigint, bigint, bigint, bigint, bigint, bigint, boolean)
    TO event_audit_writer, event_audit_auditor;
REVOKE INSERT ON audit.verify_runs FROM event_audit_writer;
-- Runs are history: appended only.
CREATE TRIGGER verify_runs_no_change BEFORE UPDATE OR DELETE ON audit.verify_runs FOR EACH ROW EXECUTE FUNCTION audit.refuse_change();
