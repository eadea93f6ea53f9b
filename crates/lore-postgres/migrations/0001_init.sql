-- Lore's PostgreSQL schema v1: every record kind, the recall index's state, episodes and the
-- causal graph, in one step (SQLite reached the same point in five).
--
-- As in SQLite, `body` holds the whole record as JSON text (exactly as written, so a record reads
-- back equal), and the other columns exist to filter and order. Times are nanoseconds since
-- the epoch (`ts`), since records carry nanoseconds and `timestamptz` keeps microseconds.
--
-- `seq` of executions and audit entries, and the lesson and episode revisions, come from
-- `lore_counters`, whose rows each writer locks before it writes (src/store.rs): numbers are
-- then handed out in commit order, so a follower that read up to N never sees a later commit
-- appear below N. A plain sequence hands numbers out in start order instead, and a follower
-- would skip a slow transaction's rows for good.

CREATE TABLE lore_counters (
    name  text PRIMARY KEY,
    value bigint NOT NULL
);
INSERT INTO lore_counters (name, value)
VALUES ('audit', 0), ('episodes', 0), ('executions', 0), ('lessons', 0);

CREATE TABLE executions (
    seq   bigint PRIMARY KEY,
    id    text NOT NULL UNIQUE,
    skill text NOT NULL,
    domain text NOT NULL,
    ts    bigint NOT NULL,
    body  text NOT NULL,
    doc   text,
    tsv   tsvector
);
CREATE INDEX executions_domain_time ON executions (domain, ts);
CREATE INDEX executions_skill_time ON executions (skill, ts);
CREATE INDEX executions_tsv ON executions USING gin (tsv);

CREATE TABLE corrections (
    seq          bigserial PRIMARY KEY,
    id           text NOT NULL UNIQUE,
    skill        text NOT NULL,
    domain       text NOT NULL,
    ts           bigint NOT NULL,
    execution_id text NOT NULL,
    body         text NOT NULL
);
CREATE INDEX corrections_domain_time ON corrections (domain, ts);
CREATE INDEX corrections_skill_time ON corrections (skill, ts);
CREATE INDEX corrections_execution ON corrections (execution_id);

CREATE TABLE lessons (
    seq      bigserial PRIMARY KEY,
    id       text NOT NULL UNIQUE,
    skill    text NOT NULL,
    domain   text NOT NULL,
    ts       bigint NOT NULL,
    status   text NOT NULL,
    -- The revision of the lesson's last change (see lore_counters).
    revision bigint NOT NULL,
    test_ids text[] NOT NULL DEFAULT '{}',
    body     text NOT NULL,
    doc      text,
    tsv      tsvector
);
CREATE INDEX lessons_domain_time ON lessons (domain, ts);
CREATE INDEX lessons_skill_time ON lessons (skill, ts);
CREATE INDEX lessons_status ON lessons (status);
CREATE INDEX lessons_revision ON lessons (revision);
CREATE INDEX lessons_tsv ON lessons USING gin (tsv);

CREATE TABLE error_events (
    seq          bigserial PRIMARY KEY,
    id           text NOT NULL UNIQUE,
    skill        text NOT NULL,
    domain       text NOT NULL,
    ts           bigint NOT NULL,
    execution_id text,
    body         text NOT NULL
);
CREATE INDEX error_events_domain_time ON error_events (domain, ts);
CREATE INDEX error_events_skill_time ON error_events (skill, ts);

CREATE TABLE audit (
    seq          bigint PRIMARY KEY,
    id           text NOT NULL UNIQUE,
    subject_kind text NOT NULL,
    subject      text NOT NULL,
    ts           bigint NOT NULL,
    body         text NOT NULL
);
CREATE INDEX audit_subject ON audit (subject, ts);

CREATE TABLE memories (
    seq      bigserial PRIMARY KEY,
    id       text NOT NULL UNIQUE,
    skill    text NOT NULL,
    domain   text NOT NULL,
    ts       bigint NOT NULL,
    category text NOT NULL,
    body     text NOT NULL,
    doc      text,
    tsv      tsvector
);
CREATE INDEX memories_skill_category ON memories (skill, category, ts);
CREATE INDEX memories_domain_time ON memories (domain, ts);
CREATE INDEX memories_tsv ON memories USING gin (tsv);

-- Each lesson's vector with the embedder's identity and a hash of its text. The column has no
-- fixed dimension, since the embedder is chosen by configuration.
CREATE TABLE lesson_vectors (
    lesson_id   text PRIMARY KEY REFERENCES lessons (id),
    embedder    text NOT NULL,
    dim         integer NOT NULL,
    source_hash bigint NOT NULL,
    vector      vector NOT NULL
);

CREATE TABLE index_state (
    key   text PRIMARY KEY,
    value bytea NOT NULL
);

CREATE TABLE episodes (
    seq     bigserial PRIMARY KEY,
    id      text NOT NULL UNIQUE,
    skill   text NOT NULL,
    domain  text NOT NULL,
    ts      bigint NOT NULL,
    outcome text NOT NULL,
    session text NOT NULL,
    body    text NOT NULL
);
CREATE INDEX episodes_skill_time ON episodes (skill, ts);
CREATE INDEX episodes_domain_time ON episodes (domain, ts);

CREATE TABLE graph_counts (
    skill     text NOT NULL,
    domain    text NOT NULL,
    element   text NOT NULL,
    key       text NOT NULL,
    count     bigint NOT NULL,
    successes bigint NOT NULL,
    PRIMARY KEY (skill, element, key)
);
CREATE INDEX graph_counts_domain ON graph_counts (domain);

CREATE TABLE graph_members (
    skill   text NOT NULL,
    domain  text NOT NULL,
    element text NOT NULL,
    key     text NOT NULL,
    episode text NOT NULL,
    PRIMARY KEY (skill, element, key, episode)
);
CREATE INDEX graph_members_episode ON graph_members (episode);
