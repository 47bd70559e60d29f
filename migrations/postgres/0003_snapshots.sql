-- Snapshots of the folded state, an optimisation beside the log (the log stays the truth).
-- Any replica may write one (in one transaction, so it appears whole or not at all); a starting
-- replica reads the newest complete one whose format it knows and replays the log after `seq`.
-- The bytes are stored in chunks, so no single value approaches bytea's limits.
CREATE TABLE snapshot (
    id         BIGSERIAL   PRIMARY KEY,
    format     INTEGER     NOT NULL,
    seq        BIGINT      NOT NULL CHECK (seq >= 0),
    bytes      BIGINT      NOT NULL CHECK (bytes >= 0),
    complete   BOOLEAN     NOT NULL DEFAULT FALSE,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE TABLE snapshot_chunk (
    snapshot_id BIGINT  NOT NULL REFERENCES snapshot (id) ON DELETE CASCADE,
    n           INTEGER NOT NULL,
    data        BYTEA   NOT NULL,
    PRIMARY KEY (snapshot_id, n)
);
