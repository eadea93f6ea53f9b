-- Lore's PostgreSQL schema v7: full-text search reads words by their stem, so that "system
-- design" finds "systems designs", as recall does and as SQLite's search does (its v14). The
-- configuration stems English words with Snowball and, unlike PostgreSQL's `english`, keeps
-- stop words, as SQLite's tokenizer does, so both stores find the same records.
CREATE TEXT SEARCH DICTIONARY lore_stem (TEMPLATE = snowball, Language = english);
CREATE TEXT SEARCH CONFIGURATION lore_search (COPY = simple);
ALTER TEXT SEARCH CONFIGURATION lore_search
    ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
    WITH lore_stem;

-- Rows indexed before are indexed again from what they were indexed from: an execution's and
-- a memory's document is their one searched part (weight D); a lesson's parts come from its
-- record. A purged row has no text to find and keeps none.
UPDATE executions SET tsv = setweight(to_tsvector('lore_search', coalesce(doc, '')), 'D')
    WHERE tsv IS NOT NULL;
UPDATE memories SET tsv = setweight(to_tsvector('lore_search', coalesce(doc, '')), 'D')
    WHERE tsv IS NOT NULL;
UPDATE lessons SET tsv =
        setweight(to_tsvector('lore_search', coalesce(r.b->>'rule', '')), 'A') ||
        setweight(to_tsvector('lore_search',
            coalesce(r.b->>'applies_when', '') || E'\n' || coalesce(r.b->'tiers'->>'summary', '')),
            'B') ||
        setweight(to_tsvector('lore_search',
            coalesce(r.b->>'mistake', '') || E'\n' || coalesce(r.b->>'root_cause', '') || E'\n' ||
            coalesce((SELECT string_agg(t, ' ') FROM jsonb_array_elements_text(r.b->'tags') AS t),
                     '')),
            'C')
    FROM (SELECT id, replace(body, '\u0000', ' ')::jsonb AS b FROM lessons
          WHERE tsv IS NOT NULL) AS r
    WHERE lessons.id = r.id;
