-- Parts of snapshots, each stored once and named by every snapshot that holds it (a full chunk
-- of journeys, which never changes once full): a snapshot then writes what changed since the
-- one before, not all the history it folds. A part's id is the SHA-256 of its data, and the
-- snapshot's sealed bytes name the ids it needs, so an altered part is refused on reading.
-- A snapshot's references are written before its parts and before it is complete, so the
-- parts no snapshot names can be deleted at any time.
CREATE TABLE IF NOT EXISTS snapshot_part (
    id   BLOB PRIMARY KEY,
    data BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS snapshot_part_ref (
    snapshot_id INTEGER NOT NULL,
    n           INTEGER NOT NULL,
    part        BLOB    NOT NULL,
    PRIMARY KEY (snapshot_id, n)
);
CREATE INDEX IF NOT EXISTS snapshot_part_ref_part ON snapshot_part_ref (part);
