-- Parts of snapshots, each stored once and named by every snapshot that holds it (a full chunk
-- of journeys, which never changes once full): a snapshot then writes what changed since the
-- one before, not all the history it folds. A part's id is the SHA-256 of its data, and the
-- snapshot's sealed bytes name the ids it needs, so an altered part is refused on reading.
-- Snapshots are written, and unnamed parts deleted, under one advisory lock, so a part a new
-- snapshot names is never deleted beneath it.
CREATE TABLE snapshot_part (
    id   BYTEA PRIMARY KEY,
    data BYTEA NOT NULL
);
CREATE TABLE snapshot_part_ref (
    snapshot_id BIGINT  NOT NULL REFERENCES snapshot (id) ON DELETE CASCADE,
    n           INTEGER NOT NULL,
    part        BYTEA   NOT NULL,
    PRIMARY KEY (snapshot_id, n)
);
CREATE INDEX snapshot_part_ref_part ON snapshot_part_ref (part);
