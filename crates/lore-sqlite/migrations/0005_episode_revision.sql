-- Lore schema v5: a revision number for episodes, so that an Engine's in-memory causal graph
-- knows when it is stale, whichever process wrote. Triggers keep it, so no write path can forget
-- it; a rebuild of the graph raises it too (crates/lore-sqlite/src/episodes.rs).
CREATE TABLE episode_revision (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    revision INTEGER NOT NULL
);
INSERT INTO episode_revision (id, revision) VALUES (1, 0);

CREATE TRIGGER episodes_revision_insert AFTER INSERT ON episodes BEGIN
    UPDATE episode_revision SET revision = revision + 1 WHERE id = 1;
END;
CREATE TRIGGER episodes_revision_update AFTER UPDATE ON episodes BEGIN
    UPDATE episode_revision SET revision = revision + 1 WHERE id = 1;
END;
CREATE TRIGGER episodes_revision_delete AFTER DELETE ON episodes BEGIN
    UPDATE episode_revision SET revision = revision + 1 WHERE id = 1;
END;
