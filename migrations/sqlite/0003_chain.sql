-- The log's keyed hash chain (src/store/chain.rs): each record's link, written in the same insert
-- as its body, and one row saying which key chains the log (its fingerprint, never the key) and
-- from which record on links were made as records were written.
ALTER TABLE op_log ADD COLUMN link BLOB;
CREATE TABLE IF NOT EXISTS log_chain (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    fingerprint BLOB    NOT NULL,
    chain_from  INTEGER NOT NULL CHECK (chain_from >= 1)
);
