-- Lore's PostgreSQL schema v4: a tuning run's progress, so a resume continues after its last
-- epoch (SQLite's 0011). One row per run that has finished an epoch and not yet the whole plan:
-- the epoch and the adapter's matrix after it (f32 bit for bit); the run's body holds the loss
-- and the heartbeat. The row goes when the run finishes.
CREATE TABLE embedder_progress (
    run_id  text PRIMARY KEY REFERENCES embedder_runs (id),
    epoch   bigint NOT NULL,
    weights real[] NOT NULL
);
