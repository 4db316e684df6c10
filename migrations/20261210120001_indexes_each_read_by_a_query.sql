-- Every index of audit.events justified by a query that reads it (issue: half the database's
-- work per row). Measured per index with scripts/profile-indexes.sh; the table of which
-- command reads each index is in ARCHITECTURE.md ("Indexes of the log").
--
-- events_type_time_idx (event_type, published_at) went on every row, at one of ~190 insertion
-- points, and no command of event-audit reads it: reconciliation, the batch report and the
-- account timeline read data_import.* rows through events_data_import_ext_idx (partial, only
-- those rows pay), join-supplier and account.created rows through the account index, and the
-- reads by time (reprocess windows, payload retention, the archive) through the partitions and
-- the BRIN index below. An auditor's query by type over a long period reads a partition whole;
-- CREATE INDEX on a closed partition gives it one when it is wanted.
DROP INDEX audit.events_type_time_idx;

-- The account index keyed by the account number alone: every query reads it by account
-- (= or IN) and filters or sorts by time afterwards; one key per account lets B-tree
-- deduplication keep an account's rows in one posting list instead of one entry each.
DROP INDEX audit.events_account_idx;
CREATE INDEX events_account_idx ON audit.events (account_number) WHERE account_number IS NOT NULL;

-- Reads by bus time (reprocess --since/--until, payload retention's published-before, the
-- archive's partition checks): a BRIN summary, a few pages for the whole log, that an insert
-- barely touches; autosummarize keeps the summarized part current.
CREATE INDEX events_published_brin ON audit.events USING brin (published_at) WITH (autosummarize = on);
