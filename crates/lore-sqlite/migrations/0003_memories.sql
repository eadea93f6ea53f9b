-- Lore schema v3: agents' own memory (core blocks, archival passages, the recall log).
--
-- Entries are append-only: a core block's newest version is the block, earlier ones stay for
-- review and undo. `category` is a column so a listing or a search reads one block kind only.
CREATE TABLE memories (
    seq       INTEGER PRIMARY KEY,
    id        TEXT NOT NULL UNIQUE,
    skill     TEXT NOT NULL,
    domain    TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    category  TEXT NOT NULL,
    body      TEXT NOT NULL
);
CREATE INDEX memories_skill_category ON memories (skill, category, timestamp);
CREATE INDEX memories_domain_time ON memories (domain, timestamp);

CREATE VIRTUAL TABLE memories_fts USING fts5 (
    text, tags,
    tokenize = 'unicode61 remove_diacritics 2'
);
