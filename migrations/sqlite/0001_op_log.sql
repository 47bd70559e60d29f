-- The engine's operation log: one JSON record per accepted change, numbered from 1 without gaps.
-- `seq` is the rowid (INTEGER PRIMARY KEY), so MAX(seq) and range reads walk the table's own b-tree.
-- IF NOT EXISTS lets a second process that raced this migration re-run it harmlessly.
CREATE TABLE IF NOT EXISTS op_log (
    seq         INTEGER PRIMARY KEY CHECK (seq >= 1),
    body        TEXT    NOT NULL,
    recorded_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
