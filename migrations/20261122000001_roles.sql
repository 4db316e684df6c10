-- Roles of the audit log. Roles are cluster-wide, so creation is idempotent and tolerates a
-- concurrent migration of another database creating the same role.
--   event_audit_owner   owns the audit tables (NOLOGIN: nobody works as the owner)
--   event_audit_writer  the daemon's role (SET ROLE after connecting): INSERT and SELECT only
--   event_audit_auditor read-only access for auditors: GRANT event_audit_auditor TO alice;
DO $$
DECLARE r text;
BEGIN
    FOREACH r IN ARRAY ARRAY['event_audit_owner', 'event_audit_writer', 'event_audit_auditor'] LOOP
        BEGIN
            EXECUTE format('CREATE ROLE %I NOLOGIN', r);
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;
        END;
    END LOOP;
END
$$;
