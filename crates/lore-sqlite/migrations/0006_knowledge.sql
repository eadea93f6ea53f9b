-- Lore schema v6: knowledge documents and their chunks (seed 004's knowledge layer).
--
-- A document row remembers the content hash of what was ingested, so an unchanged file is
-- skipped; its chunks are replaced with it as a whole. Vectors sit beside the chunk as
-- little-endian f32 with the embedder's name and dimension. The revision row grows with every
-- sync, so a process holding an index over the chunks notices another process's ingest.
CREATE TABLE knowledge_documents (
    skill  TEXT NOT NULL,
    domain TEXT NOT NULL,
    source TEXT NOT NULL,
    body   TEXT NOT NULL,
    PRIMARY KEY (skill, source)
);
CREATE INDEX knowledge_documents_domain ON knowledge_documents (domain);

CREATE TABLE knowledge_chunks (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    skill        TEXT NOT NULL,
    domain       TEXT NOT NULL,
    source       TEXT NOT NULL,
    ordinal      INTEGER NOT NULL,
    body         TEXT NOT NULL,
    embedder     TEXT,
    dim          INTEGER,
    vector       BLOB
);
CREATE INDEX knowledge_chunks_document ON knowledge_chunks (skill, source, ordinal);
CREATE INDEX knowledge_chunks_domain ON knowledge_chunks (domain);

CREATE TABLE knowledge_revision (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    revision INTEGER NOT NULL
);
INSERT INTO knowledge_revision (id, revision) VALUES (1, 0);
