-- Erasure of a person by any of their identifiers (`event-audit erase --account`), and what
-- keeps them erased afterwards.
--
-- audit.erasure_pepper   one random 32-byte value of this database: a person's identifiers are
--                        remembered only as SHA-256(pepper || identifier), never in clear.
-- audit.erased_subjects  each erased identifier's keyed hash, the erasure that erased it and the
--                        tombstone that stands for the person in batches and reconciliation
--                        results (`erased:<erasure>`): reconciliation never asks the platform
--                        about, nor stores, an account whose number hashes to one of these.
-- Both are append-only, written only by the eraser; the writer (reconciliation) reads them.
CREATE TABLE audit.erasure_pepper (
    id      boolean PRIMARY KEY DEFAULT true CHECK (id),
    pepper  bytea   NOT NULL CHECK (octet_length(pepper) = 32)
);
-- gen_random_uuid() draws from the server's strong random source (122 random bits each).
INSERT INTO audit.erasure_pepper (pepper)
    SELECT substring(decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex') FROM 1 FOR 32);
ALTER TABLE audit.erasure_pepper OWNER TO event_audit_owner;
REVOKE ALL ON audit.erasure_pepper FROM PUBLIC;
GRANT SELECT ON audit.erasure_pepper TO event_audit_eraser, event_audit_writer;
CREATE TRIGGER erasure_pepper_no_change BEFORE UPDATE OR DELETE ON audit.erasure_pepper
    FOR EACH ROW EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER erasure_pepper_no_truncate BEFORE TRUNCATE ON audit.erasure_pepper
    FOR EACH STATEMENT EXECUTE FUNCTION audit.refuse_change();

CREATE TABLE audit.erased_subjects (
    subject     bytea  PRIMARY KEY CHECK (octet_length(subject) = 32),
    erasure_id  bigint NOT NULL REFERENCES audit.erasures (erasure_id),
    tombstone   text   NOT NULL
);
ALTER TABLE audit.erased_subjects OWNER TO event_audit_owner;
REVOKE ALL ON audit.erased_subjects FROM PUBLIC;
GRANT SELECT, INSERT ON audit.erased_subjects TO event_audit_eraser;
GRANT SELECT ON audit.erased_subjects TO event_audit_writer, event_audit_auditor;
CREATE TRIGGER erased_subjects_no_change BEFORE UPDATE OR DELETE ON audit.erased_subjects
    FOR EACH ROW EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER erased_subjects_no_truncate BEFORE TRUNCATE ON audit.erased_subjects
    FOR EACH STATEMENT EXECUTE FUNCTION audit.refuse_change();

-- A reconciliation result's meter points (their identifiers and statuses) go with the person.
GRANT UPDATE (meter_points) ON audit.reconcile_results TO event_audit_eraser;
-- The eraser finds the person's batches by supplier.
GRANT SELECT ON audit.batches, audit.batch_members TO event_audit_eraser;
-- The daemon counts the people erased (event_audit_erased_people_total).
GRANT SELECT ON audit.erasures TO event_audit_writer;
