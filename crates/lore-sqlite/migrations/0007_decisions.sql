-- Lore schema v7: resolved human-in-the-loop decisions (seed 004's decision corpus).
--
-- Curated through the lessons' states; `status` is a column so recall reads approved ones only.
CREATE TABLE decisions (
    seq        INTEGER PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE,
    skill      TEXT NOT NULL,
    domain     TEXT NOT NULL,
    status     TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    body       TEXT NOT NULL
);
CREATE INDEX decisions_skill_status ON decisions (skill, status);
CREATE INDEX decisions_domain ON decisions (domain);

CREATE TABLE decision_revision (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    revision INTEGER NOT NULL
);
INSERT INTO decision_revision (id, revision) VALUES (1, 0);
