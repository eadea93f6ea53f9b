-- Lore schema: a tuning run's progress, so a resume continues after its last epoch.
--
-- One row per run that has finished an epoch and not yet the whole plan: the epoch and the
-- adapter's matrix after it, as a little-endian f32 blob like a checkpoint's. The run's body
-- holds the loss and the heartbeat; the row goes when the run finishes.
CREATE TABLE embedder_progress (
    run_id  TEXT PRIMARY KEY REFERENCES embedder_runs (id),
    epoch   INTEGER NOT NULL,
    weights BLOB NOT NULL
);
