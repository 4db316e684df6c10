-- The log's rows as the rooms that read their contents see them (reconciliation, reprocessing):
-- a view the log owns, so that a change to how the rows are stored changes the view, not its
-- readers' queries. A plain projection, inlined by the planner (the table's indexes and its
-- partition pruning apply as before); security_invoker, so a reader needs the grants it needs
-- on audit.events itself.
CREATE VIEW audit.log_rows WITH (security_invoker = true) AS SELECT * FROM audit.events;
ALTER VIEW audit.log_rows OWNER TO event_audit_owner;
REVOKE ALL ON audit.log_rows FROM PUBLIC;
GRANT SELECT ON audit.log_rows TO event_audit_writer, event_audit_auditor, event_audit_eraser;
