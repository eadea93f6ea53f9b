-- Lore's PostgreSQL schema v3: the embedder's tuning (seed 002's fine-tune lifecycle), as
-- SQLite keeps it (its 0009). Runs and checkpoints are JSON bodies with the columns their
-- listings sort on; a checkpoint's matrix is a `real[]` beside it (f32, bit for bit).
-- `embedder_active` holds at most one row: the checkpoint recall applies (none: the base alone).
CREATE TABLE embedder_runs (
    seq        bigserial PRIMARY KEY,
    id         text NOT NULL UNIQUE,
    status     text NOT NULL,
    started_at bigint NOT NULL,
    body       text NOT NULL
);

CREATE TABLE embedder_checkpoints (
    seq     bigserial PRIMARY KEY,
    id      text NOT NULL UNIQUE,
    run_id  text NOT NULL REFERENCES embedder_runs (id),
    body    text NOT NULL,
    weights real[] NOT NULL
);

CREATE TABLE embedder_active (
    id         integer PRIMARY KEY CHECK (id = 1),
    checkpoint text REFERENCES embedder_checkpoints (id)
);
