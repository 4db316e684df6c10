-- Row encoding version 2: the row hash also covers where the stored payload lies in `raw`
-- (so a payload set to NULL is detected), why a payload could not be stored as jsonb
-- (`payload_error`), and the fingerprint of the catalogue that gave the verdict (`catalogue`).
-- Rows written before keep version 1 (their `catalogue` is NULL).
ALTER TABLE audit.events
    ADD COLUMN payload_error text,
    ADD COLUMN catalogue text COLLATE "C";

-- Which daemon instance wrote each link (several daemons may share one consumer).
ALTER TABLE audit.chain_links ADD COLUMN instance text;

-- Catalogue fingerprints that judged rows, with when each was first used.
CREATE TABLE audit.catalogues (
    fingerprint    text COLLATE "C" PRIMARY KEY,
    first_used_at  timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE audit.catalogues OWNER TO event_audit_owner;
REVOKE ALL ON audit.catalogues FROM PUBLIC;
GRANT SELECT, INSERT ON audit.catalogues TO event_audit_writer;
GRANT SELECT ON audit.catalogues TO event_audit_auditor;
CREATE TRIGGER catalogues_no_change BEFORE UPDATE OR DELETE ON audit.catalogues
    FOR EACH ROW EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER catalogues_no_truncate BEFORE TRUNCATE ON audit.catalogues
    FOR EACH STATEMENT EXECUTE FUNCTION audit.refuse_change();

-- The auditor contract gains the two columns, at the end.
CREATE OR REPLACE VIEW public.event_log AS
SELECT
    e.stream,
    e.stream_seq,
    e.event_id,
    CASE WHEN e.event_version IS NULL THEN e.event_type ELSE e.event_type || '-' || e.event_version END AS event,
    e.event_type,
    e.event_version,
    e.status,
    COALESCE(e.errors, '[]'::jsonb) AS errors,
    COALESCE(e.unknown_fields, '[]'::jsonb) AS unknown_fields,
    e.payload,
    e.account_number,
    e.occurred_at,
    e.received_at,
    e.published_at,
    e.subject,
    e.envelope,
    e.delivery_count,
    e.headers,
    CASE WHEN e.event_id IS NULL THEN NULL ELSE COALESCE(f.finding, 'first') END AS id_status,
    f.first_stream AS duplicate_of_stream,
    f.first_stream_seq AS duplicate_of_seq,
    e.batch_id,
    e.raw,
    e.catalogue,
    e.payload_error
FROM audit.events e
LEFT JOIN audit.id_findings f
    ON f.stream = e.stream AND f.stream_seq = e.stream_seq AND f.published_at = e.published_at;
