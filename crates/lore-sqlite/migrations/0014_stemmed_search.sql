-- Lore schema v14: full-text search reads words by their stem (Porter's), so that "system
-- design" finds "systems designs", as recall does and as PostgreSQL's search does (its v7).
-- FTS5 fixes a table's tokenizer when it is made: each table is made again with the stemming
-- tokenizer and its rows copied under the same rowids, which tie them to their records.
CREATE VIRTUAL TABLE lessons_fts_stemmed USING fts5 (
    rule, applies_when, mistake, root_cause, tags, summary,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO lessons_fts_stemmed (rowid, rule, applies_when, mistake, root_cause, tags, summary)
    SELECT rowid, rule, applies_when, mistake, root_cause, tags, summary FROM lessons_fts;
DROP TABLE lessons_fts;
ALTER TABLE lessons_fts_stemmed RENAME TO lessons_fts;

CREATE VIRTUAL TABLE executions_fts_stemmed USING fts5 (
    input, output,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO executions_fts_stemmed (rowid, input, output)
    SELECT rowid, input, output FROM executions_fts;
DROP TABLE executions_fts;
ALTER TABLE executions_fts_stemmed RENAME TO executions_fts;

CREATE VIRTUAL TABLE memories_fts_stemmed USING fts5 (
    text, tags,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
INSERT INTO memories_fts_stemmed (rowid, text, tags)
    SELECT rowid, text, tags FROM memories_fts;
DROP TABLE memories_fts;
ALTER TABLE memories_fts_stemmed RENAME TO memories_fts;
