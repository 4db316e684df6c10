-- The auditor contract: `event_log`, one row per recorded message. Stable column names; see
-- README "For auditors".
CREATE VIEW public.event_log AS
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
    e.raw
FROM audit.events e
LEFT JOIN audit.id_findings f
    ON f.stream = e.stream AND f.stream_seq = e.stream_seq AND f.published_at = e.published_at;

ALTER VIEW public.event_log OWNER TO event_audit_owner;
GRANT SELECT ON public.event_log TO event_audit_auditor, event_audit_writer;
