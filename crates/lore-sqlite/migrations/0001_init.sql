-- Lore schema v1.
--
-- One table per record kind. `body` holds the whole record as JSON (the lore-core type through
-- serde), so adding a field to a record needs no migration; the other columns exist only to
-- filter and order. `seq` is the insertion order and the rowid of the record's full-text row.
-- Timestamps are UTC text of fixed width (`2026-02-20T12:43:41.000000000Z`), so text order is
-- time order.

CREATE TABLE executions (
    seq       INTEGER PRIMARY KEY,
    id        TEXT NOT NULL UNIQUE,
    skill     TEXT NOT NULL,
    domain    TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    body      TEXT NOT NULL
);
CREATE INDEX executions_domain_time ON executions (domain, timestamp);
CREATE INDEX executions_skill_time ON executions (skill, timestamp);

CREATE TABLE corrections (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    skill        TEXT NOT NULL,
    domain       TEXT NOT NULL,
    timestamp    TEXT NOT NULL,
    execution_id TEXT NOT NULL,
    body         TEXT NOT NULL
);
CREATE INDEX corrections_domain_time ON corrections (domain, timestamp);
CREATE INDEX corrections_skill_time ON corrections (skill, timestamp);
CREATE INDEX corrections_execution ON corrections (execution_id);

CREATE TABLE lessons (
    seq       INTEGER PRIMARY KEY,
    id        TEXT NOT NULL UNIQUE,
    skill     TEXT NOT NULL,
    domain    TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    status    TEXT NOT NULL,
    body      TEXT NOT NULL
);
CREATE INDEX lessons_domain_time ON lessons (domain, timestamp);
CREATE INDEX lessons_skill_time ON lessons (skill, timestamp);
CREATE INDEX lessons_status ON lessons (status);

CREATE TABLE error_events (
    seq       INTEGER PRIMARY KEY,
    id        TEXT NOT NULL UNIQUE,
    skill     TEXT NOT NULL,
    domain    TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    body      TEXT NOT NULL
);
CREATE INDEX error_events_domain_time ON error_events (domain, timestamp);
CREATE INDEX error_events_skill_time ON error_events (skill, timestamp);

CREATE TABLE audit (
    seq          INTEGER PRIMARY KEY,
    id           TEXT NOT NULL UNIQUE,
    subject_kind TEXT NOT NULL,
    subject      TEXT NOT NULL,
    timestamp    TEXT NOT NULL,
    body         TEXT NOT NULL
);
CREATE INDEX audit_subject ON audit (subject, timestamp);

-- Full-text indexes; a row's rowid is the `seq` of its record. They keep their own copy of the
-- text so that snippet() can quote it.
CREATE VIRTUAL TABLE lessons_fts USING fts5 (
    rule, applies_when, mistake, root_cause, tags, summary,
    tokenize = 'unicode61 remove_diacritics 2'
);

CREATE VIRTUAL TABLE executions_fts USING fts5 (
    input, output,
    tokenize = 'unicode61 remove_diacritics 2'
);
