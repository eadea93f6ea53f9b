-- Lore schema v12: what changed in the knowledge store after a revision.
--
-- Each document row carries the revision of the sync that wrote it, and a removed document
-- leaves a tombstone with the revision that removed it, so a reader holding an index at
-- revision R reads only the documents written or removed after R instead of every chunk. A
-- tombstone table rather than a flag on the removed row: every other read of documents and
-- chunks stays as it was, and a document written again under the same name drops its
-- tombstone, so the table holds at most one row per name ever removed and not re-added.
ALTER TABLE knowledge_documents ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
CREATE INDEX knowledge_documents_revision ON knowledge_documents (revision);

CREATE TABLE knowledge_removals (
    skill    TEXT NOT NULL,
    source   TEXT NOT NULL,
    revision INTEGER NOT NULL,
    PRIMARY KEY (skill, source)
);
CREATE INDEX knowledge_removals_revision ON knowledge_removals (revision);
