-- Batches as first-class objects: a registered manifest (the accounts, and the external order ids,
-- of one migration batch of one import supplier), closed by command or once settled; runs name
-- their batch and their scope (so runs of the same scope can be compared), and carry the
-- registration follow-through next to the import verdicts. Insert-only like the runs: a batch's
-- list never changes (registering the same name with another list is refused) and closing a
-- batch adds a row to batch_closures.
CREATE TABLE audit.batches (
    id               bigserial   PRIMARY KEY,
    supplier         text        NOT NULL,
    name             text        NOT NULL CHECK (name <> ''),
    accounts         integer     NOT NULL,
    orders           integer     NOT NULL,
    manifest_sha256  text        NOT NULL,   -- of the sorted, deduplicated lists
    source           text,                   -- the manifest's file name as given
    tolerances       text[]      NOT NULL DEFAULT '{}',   -- VERDICT or VERDICT=N, for every run of the batch
    registered_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (supplier, name)
);

CREATE TABLE audit.batch_members (
    batch_id     bigint NOT NULL REFERENCES audit.batches (id),
    kind         text   NOT NULL CHECK (kind IN ('account', 'order')),
    external_id  text   NOT NULL,
    PRIMARY KEY (batch_id, kind, external_id)
);

CREATE TABLE audit.batch_closures (
    batch_id   bigint      PRIMARY KEY REFERENCES audit.batches (id),
    closed_at  timestamptz NOT NULL DEFAULT now(),
    reason     text        NOT NULL CHECK (reason IN ('command', 'settled')),
    run_id     bigint      REFERENCES audit.reconcile_runs (id)   -- the run that settled it
);

ALTER TABLE audit.reconcile_runs ADD COLUMN batch_id bigint REFERENCES audit.batches (id);
-- `batch:<id>`, `suppliers:<codes>` or `manifest:<sha256 prefix>`: runs of one scope are compared.
ALTER TABLE audit.reconcile_runs ADD COLUMN scope text;
ALTER TABLE audit.reconcile_runs ADD COLUMN registration_counts jsonb;   -- registration -> accounts
ALTER TABLE audit.reconcile_results ADD COLUMN registration text;       -- the account's roll-up
CREATE INDEX reconcile_runs_scope_idx ON audit.reconcile_runs (scope, id);
CREATE INDEX reconcile_runs_batch_idx ON audit.reconcile_runs (batch_id, id);

ALTER TABLE audit.batches OWNER TO event_audit_owner;
ALTER TABLE audit.batch_members OWNER TO event_audit_owner;
ALTER TABLE audit.batch_closures OWNER TO event_audit_owner;
ALTER SEQUENCE audit.batches_id_seq OWNER TO event_audit_owner;
REVOKE ALL ON audit.batches, audit.batch_members, audit.batch_closures FROM PUBLIC;
GRANT SELECT, INSERT ON audit.batches, audit.batch_members, audit.batch_closures TO event_audit_writer;
GRANT USAGE ON SEQUENCE audit.batches_id_seq TO event_audit_writer;
GRANT SELECT ON audit.batches, audit.batch_members, audit.batch_closures TO event_audit_auditor;
