-- Lore's PostgreSQL schema v5: what changed in the knowledge store after a revision, as
-- SQLite keeps it (its 0012).
--
-- Each document row carries the knowledge revision of the sync that wrote it, and a removed
-- document leaves a tombstone with the revision that removed it, so a server holding an index
-- at revision R reads only what was written or removed after R. Tombstones rather than a flag
-- on removed rows keep every other read as it was; a name written again drops its tombstone.
ALTER TABLE knowledge_documents ADD COLUMN revision bigint NOT NULL DEFAULT 0;
CREATE INDEX knowledge_documents_revision ON knowledge_documents (revision);

CREATE TABLE knowledge_removals (
    skill    text NOT NULL,
    source   text NOT NULL,
    revision bigint NOT NULL,
    PRIMARY KEY (skill, source)
);
CREATE INDEX knowledge_removals_revision ON knowledge_removals (revision);
