-- Reconciliation: every run of `event-audit reconcile` (or of the daemon's schedule) and its
-- per-account verdicts, so that history can be compared. Written by the writer role in one
-- transaction per run (INSERT only: a run is never edited afterwards).
CREATE TABLE audit.reconcile_runs (
    id              bigserial   PRIMARY KEY,
    started_at      timestamptz NOT NULL,
    finished_at     timestamptz NOT NULL,
    trigger         text        NOT NULL CHECK (trigger IN ('cli', 'daemon')),
    suppliers       text[]      NOT NULL,
    parameters      jsonb       NOT NULL,   -- window, grace, manifest size, REST URL (no secrets)
    counts          jsonb       NOT NULL,   -- verdict -> accounts
    order_counts    jsonb       NOT NULL,   -- data_import.order_process outcome -> events
    accounts        integer     NOT NULL,
    rest_calls      integer     NOT NULL,   -- requests made (lists plus per-account), retries apart
    rest            jsonb       NOT NULL,   -- calls by kind, attempts, retries
    outcome         text        NOT NULL CHECK (outcome IN ('ok', 'mismatches', 'incomplete')),
    error           text                    -- why an incomplete run stopped
);
CREATE INDEX reconcile_runs_started_idx ON audit.reconcile_runs (started_at);

CREATE TABLE audit.reconcile_results (
    run_id                   bigint      NOT NULL REFERENCES audit.reconcile_runs (id),
    supplier                 text        NOT NULL,
    external_account_number  text        NOT NULL,
    verdict                  text        NOT NULL,
    event_outcome            text,        -- complete | error | cancelled | dry_run_complete | dry_run_error
    event_type               text,
    event_id                 text,
    event_identifier         text,        -- `identifier` of a complete event
    event_time               timestamptz,
    platform_status          text        NOT NULL,
    platform_account_number  text,
    platform_created_at      timestamptz,
    account_created_event    boolean     NOT NULL,
    detail                   text,
    meter_points             jsonb,
    PRIMARY KEY (run_id, external_account_number)
);
-- History of one account across runs.
CREATE INDEX reconcile_results_account_idx ON audit.reconcile_results (external_account_number, run_id);

-- Outcome events by external account number (reconciliation and the account timeline). Partial:
-- only data_import rows pay for it at ingest; queries must repeat the predicate verbatim.
CREATE INDEX events_data_import_ext_idx ON audit.events ((payload ->> 'external_identifier'), occurred_at)
    WHERE event_type LIKE 'data_import.%';

ALTER TABLE audit.reconcile_runs OWNER TO event_audit_owner;
ALTER TABLE audit.reconcile_results OWNER TO event_audit_owner;
ALTER SEQUENCE audit.reconcile_runs_id_seq OWNER TO event_audit_owner;
REVOKE ALL ON audit.reconcile_runs, audit.reconcile_results FROM PUBLIC;
GRANT SELECT, INSERT ON audit.reconcile_runs, audit.reconcile_results TO event_audit_writer;
GRANT USAGE ON SEQUENCE audit.reconcile_runs_id_seq TO event_audit_writer;
GRANT SELECT ON audit.reconcile_runs, audit.reconcile_results TO event_audit_auditor;
