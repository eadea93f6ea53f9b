-- Lore schema v2: what the recall index needs beside the lessons.
--
-- `lesson_changes` gives every lesson the revision of its last change, maintained by triggers so
-- that no write path (this build's, an older one's, a tool's) can forget it. A revision is one
-- more than the highest so far; SQLite runs one writer at a time, so revisions only grow. A
-- reader that remembers the highest revision it saw asks only for the lessons changed since.
CREATE TABLE lesson_changes (
    lesson_seq INTEGER PRIMARY KEY REFERENCES lessons (seq),
    revision   INTEGER NOT NULL
);
CREATE INDEX lesson_changes_revision ON lesson_changes (revision);
INSERT INTO lesson_changes (lesson_seq, revision) SELECT seq, seq FROM lessons;

CREATE TRIGGER lessons_changed_on_insert AFTER INSERT ON lessons BEGIN
    INSERT OR REPLACE INTO lesson_changes (lesson_seq, revision)
    VALUES (NEW.seq, (SELECT COALESCE(MAX(revision), 0) + 1 FROM lesson_changes));
END;
CREATE TRIGGER lessons_changed_on_update AFTER UPDATE ON lessons BEGIN
    INSERT OR REPLACE INTO lesson_changes (lesson_seq, revision)
    VALUES (NEW.seq, (SELECT COALESCE(MAX(revision), 0) + 1 FROM lesson_changes));
END;

-- Each lesson's vector: the embedder's identity and dimension, a hash of the text it was made
-- from (a changed lesson's vector is stale), and the vector as little-endian f32.
CREATE TABLE lesson_vectors (
    lesson_id   TEXT PRIMARY KEY REFERENCES lessons (id),
    embedder    TEXT NOT NULL,
    dim         INTEGER NOT NULL,
    source_hash INTEGER NOT NULL,
    vector      BLOB NOT NULL
);

-- Small named values of the recall index: the frozen fit of the embedder.
CREATE TABLE index_state (
    key   TEXT PRIMARY KEY,
    value BLOB NOT NULL
);
