-- PostgreSQL 008: keyword context (ADR 0036; SQLite's migration 015). A dialogue turn (an
-- episode with a session and no key) is keyword-indexed with the last 100 characters of each
-- of the two turns before it in its session: the text in keyword_context, its words in
-- fts_context (its own GIN index; ranked with fts as one vector: search.py). Written
-- with the turn (backends/postgres/sql.py INSERT_IN_CONTEXT) and rewritten by the triggers
-- below for the turns after one that is deleted (forgotten, expired, archived) or edited, so
-- no forgotten word stays in a later turn. Neither column keeps planner statistics (006).
ALTER TABLE memories ADD COLUMN IF NOT EXISTS keyword_context text NOT NULL DEFAULT '',
    ADD COLUMN IF NOT EXISTS fts_context tsvector NOT NULL DEFAULT ''::tsvector;
ALTER TABLE memories ALTER COLUMN keyword_context SET STATISTICS 0,
    ALTER COLUMN fts_context SET STATISTICS 0;

CREATE OR REPLACE FUNCTION clawmem_turn_context(ns text, sid text, before bigint) RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT COALESCE(string_agg(t, ' ' ORDER BY seq DESC), '') FROM (
        SELECT right(content, 100) AS t, seq FROM memories WHERE namespace = ns
        AND session_id = sid AND kind = 'episode' AND key IS NULL AND seq < before
        ORDER BY seq DESC LIMIT 2) p
$$;

UPDATE memories m SET keyword_context = c.ctx, fts_context = to_tsvector('clawmem', c.ctx)
FROM (SELECT seq, clawmem_turn_context(namespace, session_id, seq) AS ctx FROM memories
      WHERE kind = 'episode' AND session_id IS NOT NULL AND key IS NULL) c
WHERE m.seq = c.seq AND c.ctx <> '';

CREATE INDEX IF NOT EXISTS memories_fts_context ON memories USING gin (fts_context);

CREATE OR REPLACE FUNCTION clawmem_requote() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memories n SET keyword_context = x.ctx, fts_context = to_tsvector('clawmem', x.ctx)
    FROM (SELECT seq, clawmem_turn_context(namespace, session_id, seq) AS ctx FROM memories
          WHERE namespace = OLD.namespace AND session_id = OLD.session_id AND seq > OLD.seq
          AND kind = 'episode' AND key IS NULL AND keyword_context <> ''
          ORDER BY seq LIMIT 2) x
    WHERE n.seq = x.seq;
    RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS memories_requote_ad ON memories;
CREATE TRIGGER memories_requote_ad AFTER DELETE ON memories FOR EACH ROW
    WHEN (OLD.kind = 'episode' AND OLD.session_id IS NOT NULL AND OLD.key IS NULL)
    EXECUTE FUNCTION clawmem_requote();
DROP TRIGGER IF EXISTS memories_requote_au ON memories;
CREATE TRIGGER memories_requote_au AFTER UPDATE OF content ON memories FOR EACH ROW
    WHEN (NEW.kind = 'episode' AND NEW.session_id IS NOT NULL AND NEW.key IS NULL)
    EXECUTE FUNCTION clawmem_requote();
