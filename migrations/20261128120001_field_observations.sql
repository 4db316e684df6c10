-- Drift from live traffic: what each committed batch saw, aggregated per (event, status, what,
-- path, kind, code), written in the batch's own transaction. `event-audit drift` is SQL over
-- this table (never a scan of raw bytes). Insert-only.
--   what = 'rows'        one row per (event, status): count, and `declared_seen`, the OR of the
--                        declared top-level fields present (bit = field order of `catalogue`)
--   what = 'undeclared'  a field the catalogue does not declare: `path` (array indexes folded
--                        to `*`), `kind` its JSON kind
--   what = 'error'       a field error of an invalid row: `path` (folded), `code`, and for
--                        invalid_type `kind` the JSON kind found
CREATE TABLE audit.field_observations (
    batch_id       bigint      NOT NULL,
    catalogue      text COLLATE "C" NOT NULL,
    event          text COLLATE "C" NOT NULL,   -- as event_log.event shows it; '' when none
    status         text        NOT NULL,
    what           text        NOT NULL CHECK (what IN ('rows', 'undeclared', 'error')),
    path           text COLLATE "C" NOT NULL DEFAULT '',
    kind           text        NOT NULL DEFAULT '',
    code           text        NOT NULL DEFAULT '',
    count          bigint      NOT NULL,
    declared_seen  bigint      NOT NULL DEFAULT 0,
    first_at       timestamptz NOT NULL,        -- bus time of the first and last row counted
    last_at        timestamptz NOT NULL
);
CREATE INDEX field_observations_time_idx ON audit.field_observations (last_at);
CREATE INDEX field_observations_path_idx ON audit.field_observations (event, what, path);

ALTER TABLE audit.field_observations OWNER TO event_audit_owner;
REVOKE ALL ON audit.field_observations FROM PUBLIC;
GRANT SELECT, INSERT ON audit.field_observations TO event_audit_writer;
GRANT SELECT ON audit.field_observations TO event_audit_auditor;
CREATE TRIGGER field_observations_no_change BEFORE UPDATE OR DELETE ON audit.field_observations
    FOR EACH ROW EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER field_observations_no_truncate BEFORE TRUNCATE ON audit.field_observations
    FOR EACH STATEMENT EXECUTE FUNCTION audit.refuse_change();
