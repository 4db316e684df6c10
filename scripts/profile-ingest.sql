-- Where PostgreSQL's time goes for the rows event-audit writes. Run against an audit log of N rows
-- (e.g. after scripts/bench-ingest.sh with its run database kept): psql $DB -f scripts/profile-ingest.sql
-- Creates tables p_* in the public schema; drop them afterwards.
\timing on
SET max_parallel_workers_per_gather = 0;
-- (a) the jsonb parse of the payloads, alone:
EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON) SELECT count(payload::text) FROM audit.events;
EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON) SELECT count((payload::text)::jsonb) FROM audit.events;
-- (b) the same rows inserted into copies of the table: all columns and indexes; without the
-- secondary indexes; without raw; without the payload.
CREATE TABLE p_full (LIKE audit.events INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING INDEXES);
CREATE TABLE p_noidx (LIKE audit.events INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
ALTER TABLE p_noidx ADD PRIMARY KEY (stream, stream_seq, published_at);
CREATE TABLE p_noraw (LIKE p_full INCLUDING ALL);
CREATE TABLE p_nopayload (LIKE p_full INCLUDING ALL);
CHECKPOINT;
INSERT INTO p_full SELECT * FROM audit.events;
CHECKPOINT;
INSERT INTO p_noidx SELECT * FROM audit.events;
CHECKPOINT;
INSERT INTO p_noraw (stream, stream_seq, published_at, received_at, subject, delivery_count, headers, envelope, event_id, event_type, event_version, status, errors, unknown_fields, payload, account_number, occurred_at, payload_error, catalogue, raw, batch_id, row_hash) SELECT stream, stream_seq, published_at, received_at, subject, delivery_count, headers, envelope, event_id, event_type, event_version, status, errors, unknown_fields, payload, account_number, occurred_at, payload_error, catalogue, ''::bytea, batch_id, row_hash FROM audit.events;
CHECKPOINT;
INSERT INTO p_nopayload (stream, stream_seq, published_at, received_at, subject, delivery_count, headers, envelope, event_id, event_type, event_version, status, errors, unknown_fields, payload, account_number, occurred_at, payload_error, catalogue, raw, batch_id, row_hash) SELECT stream, stream_seq, published_at, received_at, subject, delivery_count, headers, envelope, event_id, event_type, event_version, status, errors, unknown_fields, NULL, account_number, occurred_at, payload_error, catalogue, raw, batch_id, row_hash FROM audit.events;
SELECT 'full' t, pg_total_relation_size('p_full') UNION ALL SELECT 'noidx', pg_total_relation_size('p_noidx') UNION ALL SELECT 'noraw', pg_total_relation_size('p_noraw') UNION ALL SELECT 'nopayload', pg_total_relation_size('p_nopayload');
SELECT count(*), avg(length(raw))::int AS raw_bytes, avg(length(payload::text))::int AS payload_text_bytes FROM audit.events;
