-- Pruning an archived partition of audit.events (`event-audit archive --prune`, and the
-- daemon's `retention.rows_for`). The eraser role calls audit.prune_partition inside the
-- transaction that appends the prune's record to the log; the function runs as the owner (it
-- detaches and drops a table) and checks, under an exclusive lock, that the partition still
-- holds exactly the rows the archive holds (their count and the digest of their row hashes),
-- then swaps it for a compact copy: every row kept with its keys, its link, its row hash and
-- its other non-personal columns, its personal columns gone as an erasure leaves them; the
-- log's own erasure records (stream `event-audit.erasures`, no personal data) are kept whole,
-- neither archived nor counted (the prune appends its own record there). The old
-- partition, with its raw messages and payloads, is dropped whole: its space goes back at once,
-- with no update per row and no vacuum. The chain, the Merkle tree and every checkpoint still
-- cover each row, and `verify` accepts the emptied rows through the prune's record.
CREATE FUNCTION audit.prune_partition(part text, expected_rows bigint, expected_digest bytea)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    bounds text;
    n bigint;
    d bytea;
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
    EXECUTE format('CREATE TABLE audit.%I (LIKE audit.events INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', stub);
    EXECUTE format('INSERT INTO audit.%I (%s, raw) SELECT %s, ''\x''::bytea FROM audit.%I '
                   'WHERE stream <> ''event-audit.erasures''', stub, kept, kept, part);
    -- Through the parent, whose column order the copy (LIKE audit.events) has.
    EXECUTE format('INSERT INTO audit.%I SELECT * FROM audit.events WHERE tableoid = %L::regclass '
                   'AND stream = ''event-audit.erasures''', stub, 'audit.' || quote_ident(part));
    EXECUTE format('ALTER TABLE audit.events DETACH PARTITION audit.%I', part);
    EXECUTE format('DROP TABLE audit.%I', part);
    EXECUTE format('ALTER TABLE audit.%I RENAME TO %I', stub, part);
    EXECUTE format('ALTER TABLE audit.events ATTACH PARTITION audit.%I %s', part, bounds);
    -- Row triggers come with the attach; TRUNCATE triggers do not (as audit.ensure_partitions).
    EXECUTE format('CREATE TRIGGER no_truncate BEFORE TRUNCATE ON audit.%I FOR EACH STATEMENT EXECUTE FUNCTION audit.refuse_change()', part);
    EXECUTE format('ANALYZE audit.%I', part);
    RETURN n;
END
$$;
ALTER FUNCTION audit.prune_partition(text, bigint, bytea) OWNER TO event_audit_owner;
REVOKE ALL ON FUNCTION audit.prune_partition(text, bigint, bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION audit.prune_partition(text, bigint, bytea) TO event_audit_eraser;
