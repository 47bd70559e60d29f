-- The engine's operation log: one JSON record per accepted change, numbered from 1 without gaps.
CREATE TABLE op_log (
    seq         BIGINT      PRIMARY KEY CHECK (seq >= 1),
    body        TEXT        NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- One row holding the last sequence number. Appenders lock it (SELECT ... FOR UPDATE), which
-- serializes commits: a reader can never see record N+1 before record N is visible, so catching up
-- "after the last seq I saw" never skips a record that commits late.
CREATE TABLE op_log_head (
    id       BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (id),
    last_seq BIGINT  NOT NULL CHECK (last_seq >= 0)
);

INSERT INTO op_log_head (id, last_seq) VALUES (TRUE, 0);
