-- A prune never takes a lock on audit.events itself. It held the partition (audit.hold_partition)
-- and then detached it from audit.events, which needs audit.events exclusively: a reader of
-- audit.events (which locks the parent, then each partition) waiting on the held partition and
-- the prune waiting on the parent was a deadlock, and one of them was cancelled. The partition
-- is now compacted in place, under the lock it already holds: its kept columns copied aside, the
-- partition truncated (its space goes back at once, as a drop gave it), and the copy written back
-- into it. Readers of audit.events wait for the prune to commit, as they waited before; none is
-- cancelled. What the prune checks, keeps and returns is unchanged.
CREATE OR REPLACE FUNCTION audit.prune_partition(part text, expected_rows bigint, expected_digest bytea)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    bounds text;
    n bigint;
    d bytea;
    cols text;
    stub text := part || '_pruning';
    kept text := 'stream, stream_seq, published_at, received_at, subject, delivery_count, '
        'envelope, event_type, event_version, status, unknown_fields, occurred_at, '
        'payload_error, catalogue, commitment, batch_id, row_hash';
BEGIN
    SELECT pg_get_expr(c.relpartbound, c.oid) INTO bounds
    FROM pg_class c JOIN pg_inherits i ON i.inhrelid = c.oid
    WHERE i.inhparent = 'audit.events'::regclass AND c.relname = part
      AND c.relnamespace = 'audit'::regnamespace;
    IF bounds IS NULL OR bounds = 'DEFAULT' THEN
        RAISE EXCEPTION 'audit.%: not a dated partition of audit.events', part
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    EXECUTE format('LOCK TABLE audit.%I IN ACCESS EXCLUSIVE MODE', part);
    EXECUTE format('SELECT count(*), sha256(coalesce(string_agg(row_hash, ''''::bytea '
                   'ORDER BY batch_id, stream, stream_seq), ''''::bytea)) FROM audit.%I '
                   'WHERE stream <> ''event-audit.erasures''', part)
        INTO n, d;
    IF n <> expected_rows OR d <> expected_digest THEN
        RAISE EXCEPTION 'audit.%: holds % rows now, the archive % (or other row hashes); archive it again', part, n, expected_rows
            USING ERRCODE = 'object_not_in_prerequisite_state';
    END IF;
    -- Every column by name, so that the copy does not depend on the partition's column order.
    SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO cols
    FROM pg_attribute a
    WHERE a.attrelid = format('audit.%I', part)::regclass AND a.attnum > 0 AND NOT a.attisdropped;
    -- LIKE the partition, not audit.events: nothing here locks the parent.
    EXECUTE format('CREATE TABLE audit.%I (LIKE audit.%I INCLUDING DEFAULTS)', stub, part);
    EXECUTE format('INSERT INTO audit.%I (%s, raw) SELECT %s, ''\x''::bytea FROM audit.%I '
                   'WHERE stream <> ''event-audit.erasures''', stub, kept, kept, part);
    EXECUTE format('INSERT INTO audit.%I (%s) SELECT %s FROM audit.%I '
                   'WHERE stream = ''event-audit.erasures''', stub, cols, cols, part);
    EXECUTE format('ALTER TABLE audit.%I DISABLE TRIGGER no_truncate', part);
    EXECUTE format('TRUNCATE audit.%I', part);
    EXECUTE format('ALTER TABLE audit.%I ENABLE TRIGGER no_truncate', part);
    EXECUTE format('INSERT INTO audit.%I (%s) SELECT %s FROM audit.%I', part, cols, cols, stub);
    EXECUTE format('DROP TABLE audit.%I', stub);
    EXECUTE format('ANALYZE audit.%I', part);
    RETURN n;
END
$$;
