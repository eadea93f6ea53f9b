-- Lore schema v4: episodes and the causal graph they aggregate into (seed 001).
--
-- The graph is kept as counts per skill, so that a scoped reader sums only the skills it may
-- see. `element` is `node`, `edge` or `pattern`; `key` is the element's identity as JSON (the
-- core's NodeKey, EdgeKey or PatternKey). `graph_members` says which episodes contributed to an
-- element, so that replacing an episode can take exactly its part back out.
CREATE TABLE episodes (
    seq       INTEGER PRIMARY KEY,
    id        TEXT NOT NULL UNIQUE,
    skill     TEXT NOT NULL,
    domain    TEXT NOT NULL,
    timestamp TEXT NOT NULL,
    outcome   TEXT NOT NULL,
    session   TEXT NOT NULL,
    body      TEXT NOT NULL
);
CREATE INDEX episodes_skill_time ON episodes (skill, timestamp);
CREATE INDEX episodes_domain_time ON episodes (domain, timestamp);
CREATE INDEX episodes_session ON episodes (session);

CREATE TABLE graph_counts (
    skill     TEXT NOT NULL,
    domain    TEXT NOT NULL,
    element   TEXT NOT NULL,
    key       TEXT NOT NULL,
    count     INTEGER NOT NULL,
    successes INTEGER NOT NULL,
    PRIMARY KEY (skill, element, key)
) WITHOUT ROWID;
CREATE INDEX graph_counts_domain ON graph_counts (domain);

CREATE TABLE graph_members (
    skill   TEXT NOT NULL,
    domain  TEXT NOT NULL,
    element TEXT NOT NULL,
    key     TEXT NOT NULL,
    episode TEXT NOT NULL,
    PRIMARY KEY (skill, element, key, episode)
) WITHOUT ROWID;
CREATE INDEX graph_members_episode ON graph_members (episode);
