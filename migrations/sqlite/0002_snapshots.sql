-- Snapshots of the folded state, an optimisation beside the log (the log stays the truth).
-- A snapshot is written in chunks, each its own short transaction, so appends never wait long;
-- `complete` is set by the last one, and only complete snapshots are read. The header inside
-- the bytes repeats `format` and `seq` and carries a checksum that reading verifies.
CREATE TABLE IF NOT EXISTS snapshot (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    format     INTEGER NOT NULL,
    seq        INTEGER NOT NULL CHECK (seq >= 0),
    bytes      INTEGER NOT NULL CHECK (bytes >= 0),
    complete   INTEGER NOT NULL DEFAULT 0,
    created_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE TABLE IF NOT EXISTS snapshot_chunk (
    snapshot_id INTEGER NOT NULL REFERENCES snapshot (id) ON DELETE CASCADE,
    n           INTEGER NOT NULL,
    data        BLOB    NOT NULL,
    PRIMARY KEY (snapshot_id, n)
);
