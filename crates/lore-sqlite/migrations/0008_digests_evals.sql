-- Lore schema: digests (seed 004's wiki) and evaluation runs (seed 004's training loop).
--
-- Every digest version is kept; the newest per skill is the one read. Evaluation sets are
-- replaced whole under (skill, name); runs are appended and never changed.
CREATE TABLE digests (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    skill        TEXT NOT NULL,
    domain       TEXT NOT NULL,
    source_hash  TEXT NOT NULL,
    generated_at TEXT NOT NULL,
    body         TEXT NOT NULL
);
CREATE INDEX digests_skill ON digests (skill, seq);
CREATE INDEX digests_domain ON digests (domain);

CREATE TABLE eval_sets (
    skill      TEXT NOT NULL,
    name       TEXT NOT NULL,
    domain     TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    body       TEXT NOT NULL,
    PRIMARY KEY (skill, name)
);
CREATE INDEX eval_sets_domain ON eval_sets (domain);

CREATE TABLE eval_runs (
    seq    INTEGER PRIMARY KEY,
    id     TEXT NOT NULL UNIQUE,
    skill  TEXT NOT NULL,
    domain TEXT NOT NULL,
    name   TEXT NOT NULL,
    run_at TEXT NOT NULL,
    body   TEXT NOT NULL
);
CREATE INDEX eval_runs_skill ON eval_runs (skill, name, seq);
CREATE INDEX eval_runs_domain ON eval_runs (domain);
