-- The log's keyed hash chain (src/store/chain.rs): each record's link, written in the same insert
-- as its body, and one row saying which key chains the log (its fingerprint, never the key) and
-- from which record on links were made as records were written.
ALTER TABLE op_log ADD COLUMN link BYTEA;
CREATE TABLE log_chain (
    id          BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (id),
    fingerprint BYTEA   NOT NULL,
    chain_from  BIGINT  NOT NULL CHECK (chain_from >= 1)
);
