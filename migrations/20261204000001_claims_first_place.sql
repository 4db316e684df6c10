-- Envelope-id claims keep the place of the id's first occurrence (stream, sequence, bus time:
-- the primary key of audit.events) and the digest of its event name and payload text (SHA-256,
-- as ingest computes it). A replayed id whose repeat carries the same digest is then a
-- duplicate without reading the log; one that differs reads its first occurrence by primary key.
-- Before, each repeated id read its first occurrence's whole batch again (2,000 rows per id: a
-- replay of one batch read it 2,000 times). Claims made before keep NULL here: their first
-- occurrence is still found among their batch's rows. Not evidence: `verify` recomputes the
-- findings from the rows.
ALTER TABLE audit.event_claims
    ADD COLUMN first_stream       text COLLATE "C",
    ADD COLUMN first_stream_seq   bigint,
    ADD COLUMN first_published_at timestamptz,
    ADD COLUMN first_digest       bytea;
