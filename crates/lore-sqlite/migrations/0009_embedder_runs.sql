-- Lore schema: the embedder's tuning (seed 002's fine-tune lifecycle).
--
-- Numbered 0009 so that it does not collide with another schema change under 0008; it is
-- applied in the order of the list in schema.rs. Runs and checkpoints are JSON bodies with the
-- columns their listings sort on; a checkpoint's matrix is a little-endian f32 blob beside it.
-- `embedder_active` holds at most one row: the checkpoint recall applies (none: the base alone).
CREATE TABLE embedder_runs (
    seq        INTEGER PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE,
    status     TEXT NOT NULL,
    started_at TEXT NOT NULL,
    body       TEXT NOT NULL
);

CREATE TABLE embedder_checkpoints (
    seq        INTEGER PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE,
    run_id     TEXT NOT NULL REFERENCES embedder_runs (id),
    body       TEXT NOT NULL,
    weights    BLOB NOT NULL
);

CREATE TABLE embedder_active (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    checkpoint TEXT REFERENCES embedder_checkpoints (id)
);
