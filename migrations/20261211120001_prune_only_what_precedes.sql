-- A prune covers only the rows recorded before its record in the log, and only a partition whose
-- range is over. audit.hold_partition, called by the eraser role first in a prune's transaction
-- (before the record is appended), refuses a partition whose upper bound has not passed, then
-- locks it until the transaction ends: batches still writing into it commit first (their links
-- precede the record), and no row enters it until the prune is done. audit.prune_partition then
-- counts exactly the rows recorded before the prune's record.
CREATE FUNCTION audit.hold_partition(part text)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    bounds text;
    upper_bound timestamptz;
BEGIN
    SELECT pg_get_expr(c.relpartbound, c.oid) INTO bounds
    FROM pg_class c JOIN pg_inherits i ON i.inhrelid = c.oid
    WHERE i.inhparent = 'audit.events'::regclass AND c.relname = part
      AND c.relnamespace = 'audit'::regnamespace;
    IF bounds IS NULL OR bounds = 'DEFAULT' THEN
        RAISE EXCEPTION 'audit.%: not a dated partition of audit.events', part
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    upper_bound := substring(bounds FROM 'TO \(''([^'']+)''\)')::timestamptz;
    IF upper_bound IS NULL OR upper_bound > now() THEN
        RAISE EXCEPTION 'audit.%: its range ends at %, which has not passed; a partition is pruned only once its month is over', part, upper_bound
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    EXECUTE format('LOCK TABLE audit.%I IN ACCESS EXCLUSIVE MODE', part);
END
$$;
ALTER FUNCTION audit.hold_partition(text) OWNER TO event_audit_owner;
REVOKE ALL ON FUNCTION audit.hold_partition(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION audit.hold_partition(text) TO event_audit_eraser;
