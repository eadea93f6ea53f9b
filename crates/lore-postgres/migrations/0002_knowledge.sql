-- Lore's PostgreSQL schema v2: seed 004's knowledge layers, as SQLite keeps them (its 0006 to
-- 0008): knowledge documents and chunks, resolved decisions, digests, evaluation sets and runs.
--
-- As in v1, `body` holds the record as JSON text and the other columns exist to filter, order
-- and find. The knowledge and decision revisions are rows of `lore_counters`, drawn under the
-- same lock as every other number, so a server that indexed revision N never misses a commit
-- numbered below it, and each bump announces itself on the change channel.

INSERT INTO lore_counters (name, value) VALUES ('decisions', 0), ('knowledge', 0);

-- A document and its chunks are replaced together; vectors sit beside the chunk, with the
-- embedder's name and dimension, like lesson vectors (no fixed dimension).
CREATE TABLE knowledge_documents (
    skill  text NOT NULL,
    domain text NOT NULL,
    source text NOT NULL,
    body   text NOT NULL,
    PRIMARY KEY (skill, source)
);
CREATE INDEX knowledge_documents_domain ON knowledge_documents (domain);

CREATE TABLE knowledge_chunks (
    seq      bigserial PRIMARY KEY,
    id       text NOT NULL UNIQUE,
    skill    text NOT NULL,
    domain   text NOT NULL,
    source   text NOT NULL,
    ordinal  integer NOT NULL,
    body     text NOT NULL,
    embedder text,
    dim      integer,
    vector   vector
);
CREATE INDEX knowledge_chunks_document ON knowledge_chunks (skill, source, ordinal);
CREATE INDEX knowledge_chunks_domain ON knowledge_chunks (domain);

-- `status` is a column so recall reads approved decisions only; `updated_at` (nanoseconds) is
-- what a curator's compare-and-set checks.
CREATE TABLE decisions (
    seq        bigserial PRIMARY KEY,
    id         text NOT NULL UNIQUE,
    skill      text NOT NULL,
    domain     text NOT NULL,
    status     text NOT NULL,
    updated_at bigint NOT NULL,
    body       text NOT NULL
);
CREATE INDEX decisions_skill_status ON decisions (skill, status);
CREATE INDEX decisions_domain ON decisions (domain);

-- Every digest version is kept; the newest per skill is read. `source_ids` lists the records it
-- quotes, so purging one of them finds every version to delete without parsing bodies.
CREATE TABLE digests (
    seq          bigserial PRIMARY KEY,
    id           text NOT NULL UNIQUE,
    skill        text NOT NULL,
    domain       text NOT NULL,
    source_hash  text NOT NULL,
    ts           bigint NOT NULL,
    source_ids   text[] NOT NULL DEFAULT '{}',
    body         text NOT NULL
);
CREATE INDEX digests_skill ON digests (skill, seq);
CREATE INDEX digests_domain ON digests (domain);
CREATE INDEX digests_sources ON digests USING gin (source_ids);

CREATE TABLE eval_sets (
    skill      text NOT NULL,
    name       text NOT NULL,
    domain     text NOT NULL,
    updated_at bigint NOT NULL,
    body       text NOT NULL,
    PRIMARY KEY (skill, name)
);
CREATE INDEX eval_sets_domain ON eval_sets (domain);

-- Runs are appended; `item_ids` lists the memory items any answer was made from, so purging
-- one finds the grades that may quote it.
CREATE TABLE eval_runs (
    seq      bigserial PRIMARY KEY,
    id       text NOT NULL UNIQUE,
    skill    text NOT NULL,
    domain   text NOT NULL,
    name     text NOT NULL,
    ts       bigint NOT NULL,
    item_ids text[] NOT NULL DEFAULT '{}',
    body     text NOT NULL
);
CREATE INDEX eval_runs_skill ON eval_runs (skill, name, seq);
CREATE INDEX eval_runs_domain ON eval_runs (domain);
CREATE INDEX eval_runs_items ON eval_runs USING gin (item_ids);
