-- Lore schema v13: a revision number for agents' memory entries, so that an Engine's in-memory
-- index of a conversation log knows when it is stale, whichever process wrote. Entries are
-- appended and only ever rewritten in place by a purge; triggers see both, so no write path can
-- forget to raise it.
CREATE TABLE memory_revision (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    revision INTEGER NOT NULL
);
INSERT INTO memory_revision (id, revision) VALUES (1, 0);

CREATE TRIGGER memories_revision_insert AFTER INSERT ON memories BEGIN
    UPDATE memory_revision SET revision = revision + 1 WHERE id = 1;
END;
CREATE TRIGGER memories_revision_update AFTER UPDATE ON memories BEGIN
    UPDATE memory_revision SET revision = revision + 1 WHERE id = 1;
END;
CREATE TRIGGER memories_revision_delete AFTER DELETE ON memories BEGIN
    UPDATE memory_revision SET revision = revision + 1 WHERE id = 1;
END;
