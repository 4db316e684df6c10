-- Envelope-id claims, half the size: audit.event_ids kept each id's text, its first occurrence's
-- place and a digest (218 bytes a row with its index, inserted at random places); a claim now
-- keeps a 16-byte key (the first 16 bytes of SHA-256 of the id's UTF-8 text) and the batch of the
-- first occurrence, whose rows (B-tree on batch_id) tell the rest when an id repeats. Not
-- evidence: `verify` recomputes the findings from the rows.
CREATE TABLE audit.event_claims (
    id_key    bytea  PRIMARY KEY,
    batch_id  bigint NOT NULL
);
INSERT INTO audit.event_claims (id_key, batch_id)
SELECT substring(sha256(convert_to(i.event_id, 'UTF8')) FROM 1 FOR 16), e.batch_id
FROM audit.event_ids i
JOIN audit.events e
  ON e.stream = i.stream AND e.stream_seq = i.stream_seq AND e.published_at = i.published_at
ON CONFLICT DO NOTHING;
DROP TABLE audit.event_ids;

ALTER TABLE audit.event_claims OWNER TO event_audit_owner;
REVOKE ALL ON audit.event_claims FROM PUBLIC;
GRANT SELECT, INSERT ON audit.event_claims TO event_audit_writer;
GRANT SELECT ON audit.event_claims TO event_audit_auditor;
CREATE TRIGGER event_claims_no_change BEFORE UPDATE OR DELETE ON audit.event_claims
    FOR EACH ROW EXECUTE FUNCTION audit.refuse_change();
CREATE TRIGGER event_claims_no_truncate BEFORE TRUNCATE ON audit.event_claims
    FOR EACH STATEMENT EXECUTE FUNCTION audit.refuse_change();
