-- Lore's PostgreSQL schema v6: a revision number for agents' memory entries (SQLite's 0013), so
-- that a server's in-memory index of a conversation log knows when another server wrote to it.
-- Entries are appended and only rewritten in place by a purge; a statement trigger sees every
-- write path, so none can forget to raise it.
CREATE TABLE memory_revision (
    id       integer PRIMARY KEY CHECK (id = 1),
    revision bigint NOT NULL
);
INSERT INTO memory_revision (id, revision) VALUES (1, 0);

CREATE FUNCTION lore_memory_revision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- The schema of the table written, not the session's search_path: one database may hold
    -- several stores, each in its own schema.
    EXECUTE format('UPDATE %I.memory_revision SET revision = revision + 1 WHERE id = 1',
                   TG_TABLE_SCHEMA);
    RETURN NULL;
END
$$;

CREATE TRIGGER memories_revision AFTER INSERT OR UPDATE OR DELETE ON memories
    FOR EACH STATEMENT EXECUTE FUNCTION lore_memory_revision();
