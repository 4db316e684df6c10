-- Reprocessing after a catalogue upgrade: stored events judged again by another catalogue.
-- Originals are never changed. A re-verdict is stored only where the verdict changes (status,
-- errors or unknown fields differ from the event's latest verdict): each is a row of its own,
-- hashed (see src/audit/reverdict.rs). Every page judged is recorded with its counts, so a run
-- says which rows it judged unchanged as well; each finished run is closed by a row whose hash
-- chains the closed runs (SHA-256(prev || run_id || rows || changed || digest of the run's
-- re-verdict hashes)). Insert-only, like the log.
CREATE TABLE audit.reprocess_runs (
    id          bigserial   PRIMARY KEY,
    started_at  timestamptz NOT NULL DEFAULT now(),
    catalogue   text COLLATE "C" NOT NULL,   -- the fingerprint that judges
    selection   jsonb       NOT NULL         -- since, until, stream, seq range, statuses
);

CREATE TABLE audit.reverdicts (
    run_id          bigint      NOT NULL REFERENCES audit.reprocess_runs (id),
    stream          text COLLATE "C" NOT NULL,
    stream_seq      bigint      NOT NULL,
    published_at    timestamptz NOT NULL,
    catalogue       text COLLATE "C" NOT NULL,
    old_status      text        NOT NULL,   -- the verdict it replaces: the latest before this run
    status          text        NOT NULL CHECK (status IN ('decoded', 'invalid', 'unknown_version', 'unknown_type', 'malformed')),
    errors          jsonb,
    unknown_fields  jsonb,
    event           text,                   -- as event_log.event shows it
    row_hash        bytea       NOT NULL,
    PRIMARY KEY (run_id, stream, stream_seq, published_at)
);
-- The latest re-verdict of an event (event_log, reconciliation).
CREATE INDEX reverdicts_event_idx ON audit.reverdicts (stream, stream_seq, published_at, run_id DESC);

-- One row per page judged, written in the page's transaction: where the page ends (a run
-- resumes after its last page), how many rows it judged and changed, and its transitions
-- ([{"event", "old", "new", "count", "examples"}]).
CREATE TABLE audit.reprocess_pages (
    run_id       bigint      NOT NULL REFERENCES audit.reprocess_runs (id),
    last_stream  text COLLATE "C" NOT NULL,
    last_seq     bigint      NOT NULL,
    last_at      timestamptz NOT NULL,
    rows         bigint      NOT NULL,
    changed      bigint      NOT NULL,
    transitions  jsonb       NOT NULL,
    PRIMARY KEY (run_id, last_stream, last_seq, last_at)
);

CREATE TABLE audit.reprocess_run_ends (
    run_id       bigint      PRIMARY KEY REFERENCES audit.reprocess_runs (id),
    finished_at  timestamptz NOT NULL DEFAULT now(),
    rows         bigint      NOT NULL,   -- rows judged
    changed      bigint      NOT NULL,   -- re-verdicts stored (verdicts that changed)
    transitions  jsonb       NOT NULL,   -- {"old→new": count}
    digest       bytea       NOT NULL,   -- SHA-256 over the run's re-verdict hashes, key order
    prev_hash    bytea       NOT NULL,
    hash         bytea       NOT NULL
);

ALTER TABLE audit.reprocess_runs OWNER TO event_audit_owner;
ALTER TABLE audit.reverdicts OWNER TO event_audit_owner;
ALTER TABLE audit.reprocess_run_ends OWNER TO event_audit_owner;
ALTER TABLE audit.reprocess_pages OWNER TO event_audit_owner;
ALTER SEQUENCE audit.reprocess_runs_id_seq OWNER TO event_audit_owner;
REVOKE ALL ON audit.reprocess_runs, audit.reverdicts, audit.reprocess_pages, audit.reprocess_run_ends FROM PUBLIC;
GRANT SELECT, INSERT ON audit.reprocess_runs, audit.reverdicts, audit.reprocess_pages, audit.reprocess_run_ends TO event_audit_writer;
GRANT USAGE ON SEQUENCE audit.reprocess_runs_id_seq TO event_audit_writer;
GRANT SELECT ON audit.reprocess_runs, audit.reverdicts, audit.reprocess_pages, audit.reprocess_run_ends TO event_audit_auditor;
CREATE TRIGGER reprocess_runs_no_change BEFORE UPDATE OR DELETE ON audit.reprocess_runs
    FOR EACH ROW EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER reverdicts_no_change BEFORE UPDATE OR DELETE ON audit.reverdicts
    FOR EACH ROW EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER reprocess_pages_no_change BEFORE UPDATE OR DELETE ON audit.reprocess_pages
    FOR EACH ROW EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER reprocess_pages_no_truncate BEFORE TRUNCATE ON audit.reprocess_pages
    FOR EACH STATEMENT EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER reprocess_run_ends_no_change BEFORE UPDATE OR DELETE ON audit.reprocess_run_ends
    FOR EACH ROW EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER reprocess_runs_no_truncate BEFORE TRUNCATE ON audit.reprocess_runs
    FOR EACH STATEMENT EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER reverdicts_no_truncate BEFORE TRUNCATE ON audit.reverdicts
    FOR EACH STATEMENT EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER reprocess_run_ends_no_truncate BEFORE TRUNCATE ON audit.reprocess_run_ends
    FOR EACH STATEMENT EXECUTE FUNCTION audit.refuse_change();

-- The latest verdict of a stored event: its latest re-verdict's status, else the original.
-- Reconciliation reads events through it.
CREATE FUNCTION audit.latest_status(s text, seq bigint, at timestamptz, original text) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT COALESCE(
        (SELECT r.status FROM audit.reverdicts r
          WHERE r.stream = s AND r.stream_seq = seq AND r.published_at = at
          ORDER BY r.run_id DESC LIMIT 1),
        original)
$$;
ALTER FUNCTION audit.latest_status(text, bigint, timestamptz, text) OWNER TO event_audit_owner;

-- The auditor contract gains the latest re-verdict, in separate columns at the end.
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
    e.payload_error,
    rv.status AS reverdict_status,
    rv.errors AS reverdict_errors,
    rv.unknown_fields AS reverdict_unknown_fields,
    rv.catalogue AS reverdict_catalogue,
    rv.run_id AS reverdict_run
FROM audit.events e
LEFT JOIN audit.id_findings f
    ON f.stream = e.stream AND f.stream_seq = e.stream_seq AND f.published_at = e.published_at
LEFT JOIN LATERAL (
    SELECT r.status, r.errors, r.unknown_fields, r.catalogue, r.run_id
    FROM audit.reverdicts r
    WHERE r.stream = e.stream AND r.stream_seq = e.stream_seq AND r.published_at = e.published_at
    ORDER BY r.run_id DESC
    LIMIT 1
) rv ON true;
