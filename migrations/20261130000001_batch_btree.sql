-- The rows of a batch by a B-tree on batch_id instead of BRIN. Every read by batch (the verify
-- walk's link ranges, the witness pass, a proof's leaf index, the partial subtrees of a proof)
-- probed the BRIN index, and BRIN ranges that VACUUM has not summarized yet match every probe:
-- on a log whose recent rows were not yet vacuumed (up to a fifth of the table between
-- autovacuum runs), one proof read the whole unsummarized tail (5.3 s on a 2M-row log). A B-tree
-- finds a batch's rows at once whatever VACUUM has done; all rows of a batch share one key, so
-- its entries deduplicate and inserts land on the rightmost page. Its ingest cost is in
-- BENCHMARKS.md ("Batch index").
DROP INDEX audit.events_batch_brin;
CREATE INDEX events_batch_idx ON audit.events (batch_id);
