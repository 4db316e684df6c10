-- Row encoding version 3: the row hash covers a salted commitment to the row's personal
-- columns instead of the columns themselves, so that they can be erased while the row hash,
-- its leaf and every other column still verify. `salt` is 32 random bytes per row, kept beside
-- `raw`; `commitment` = SHA-256(salt || the opening's fields), see `src/row/canon.rs` and
-- docs/auditors.md. Rows written before keep both NULL (encodings 1 and 2).
-- Two NULL columns: no rewrite and no scan of the log (no CHECK constraint, whose validation
-- would read every partition under the table's lock); `verify` refuses a commitment that is
-- not 32 bytes, and a salt of another length does not open its commitment.
ALTER TABLE audit.events ADD COLUMN salt bytea, ADD COLUMN commitment bytea;
