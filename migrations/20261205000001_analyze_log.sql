-- Autovacuum analyzes each partition of audit.events but never the partitioned table itself, so
-- queries over the whole log (verify's walk by batch and link, the envelope-id findings) were
-- planned without statistics for it: on a log of 1.8 million rows in 58,000 links written in
-- half an hour, `verify` did not finish in 10 minutes, and took 13 s once the table had been
-- analyzed (scripts/soak.sh). This narrow function, run with the owner's rights, lets the
-- daemon refresh those statistics when the log has grown by a tenth (plus 1,000 rows) since they
-- were taken, the rule autovacuum applies to plain tables. Returns whether it analyzed.
CREATE FUNCTION audit.analyze_log() RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    rows_now bigint;
    known real;
BEGIN
    SELECT tree_size INTO rows_now FROM audit.chain_head WHERE id;
    SELECT reltuples INTO known FROM pg_class WHERE oid = 'audit.events'::regclass;
    IF rows_now IS NULL OR rows_now <= greatest(known, 0) * 1.1 + 1000 THEN
        RETURN false;
    END IF;
    ANALYZE audit.events;
    RETURN true;
END
$$;
ALTER FUNCTION audit.analyze_log() OWNER TO event_audit_owner;
REVOKE ALL ON FUNCTION audit.analyze_log() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION audit.analyze_log() TO event_audit_writer;
