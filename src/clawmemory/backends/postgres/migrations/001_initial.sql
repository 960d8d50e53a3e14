-- PostgreSQL 001: the data model of SQLite's migrations 001-010 in one step, in the schema the
-- connection's search_path names first. Times are Unix epoch seconds (double precision).
-- Full-text search: a tsvector per memory (key A, tags B, content C, source D) filled by the
-- store from text it has folded like SQLite's unicode61 tokenizer (store/postgres_sql.py), and
-- a text search configuration that stems like FTS5's porter tokenizer and keeps stop words.
CREATE TEXT SEARCH DICTIONARY clawmem_stem (TEMPLATE = snowball, Language = english);
CREATE TEXT SEARCH CONFIGURATION clawmem (COPY = simple);
ALTER TEXT SEARCH CONFIGURATION clawmem ALTER MAPPING FOR asciiword, word, hword, hword_part,
    hword_asciipart, asciihword WITH clawmem_stem;

CREATE TABLE memories (
    seq            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,  -- never reused
    id             text NOT NULL,
    namespace      text NOT NULL,
    key            text,
    kind           text NOT NULL,
    content        text NOT NULL,
    tags           jsonb NOT NULL DEFAULT '[]',
    metadata       text NOT NULL DEFAULT '{}',      -- the JSON text, exactly as written
    source         text,
    source_role    text,
    source_ids     jsonb NOT NULL DEFAULT '[]',
    session_id     text,
    created_at     double precision NOT NULL,
    event_time     double precision,
    updated_at     double precision NOT NULL,
    last_accessed  double precision,
    access_count   bigint NOT NULL DEFAULT 0,
    score          bigint NOT NULL DEFAULT 0,
    confidence     double precision NOT NULL DEFAULT 1.0,
    decay_rate     double precision NOT NULL DEFAULT 0.1,
    valid_until    double precision,
    supersedes     text,
    stored_at      double precision NOT NULL DEFAULT 0,
    -- metadata key -> [kind, text, lower text] as model.meta_equal compares them (filters)
    meta_cmp       jsonb NOT NULL DEFAULT '{}',
    fts            tsvector NOT NULL
);
CREATE UNIQUE INDEX memories_ns_id ON memories (namespace, id);
CREATE UNIQUE INDEX memories_ns_key ON memories (namespace, key) WHERE key IS NOT NULL;
CREATE INDEX memories_ns_created ON memories (namespace, created_at);
CREATE INDEX memories_ns_kind ON memories (namespace, kind, created_at);
CREATE INDEX memories_ns_session ON memories (namespace, session_id);
CREATE INDEX memories_ns_supersedes ON memories (namespace, supersedes) WHERE supersedes IS NOT NULL;
CREATE INDEX memories_fts ON memories USING gin (fts);

CREATE TABLE links (
    namespace  text NOT NULL,
    a_id       text NOT NULL,
    b_id       text NOT NULL,
    strength   double precision NOT NULL DEFAULT 1.0,
    origin     text NOT NULL DEFAULT 'manual',
    created_at double precision NOT NULL,
    updated_at double precision NOT NULL,
    PRIMARY KEY (namespace, a_id, b_id)
);
CREATE INDEX links_b ON links (namespace, b_id);

CREATE TABLE entities (
    id             text PRIMARY KEY,
    namespace      text NOT NULL,
    canonical_name text NOT NULL,
    norm_name      text NOT NULL,
    type           text NOT NULL,
    aliases        jsonb NOT NULL DEFAULT '[]',
    alias_keys     text[] NOT NULL DEFAULT '{}',    -- entities.base.alias_key of each alias
    summary        text,
    mention_count  bigint NOT NULL DEFAULT 1,
    protected      boolean NOT NULL DEFAULT false,
    created_at     double precision NOT NULL,
    updated_at     double precision NOT NULL
);
CREATE UNIQUE INDEX entities_ns_name ON entities (namespace, norm_name, type);
CREATE INDEX entities_alias_keys ON entities USING gin (alias_keys);
CREATE TABLE memory_entities (
    namespace text NOT NULL,
    memory_id text NOT NULL,
    entity_id text NOT NULL,
    linked    bigint GENERATED ALWAYS AS IDENTITY,  -- link order (SQLite's rowid)
    PRIMARY KEY (namespace, memory_id, entity_id)
);
CREATE INDEX memory_entities_entity ON memory_entities (entity_id);

CREATE TABLE messages (
    namespace    text NOT NULL,
    session_id   text NOT NULL,
    seq          bigint NOT NULL,
    role         text NOT NULL,
    content      text NOT NULL,
    tool_calls   text,
    metadata     text NOT NULL DEFAULT '{}',
    created_at   double precision NOT NULL,
    tool_call_id text,
    name         text,
    PRIMARY KEY (namespace, session_id, seq)
);
CREATE TABLE summaries (
    namespace  text NOT NULL,
    session_id text NOT NULL,
    summary    text NOT NULL,
    updated_at double precision NOT NULL,
    covers     bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (namespace, session_id)
);
CREATE TABLE sessions (
    namespace       text NOT NULL,
    session_id      text NOT NULL,
    first_seen_at   double precision NOT NULL,
    consolidated_at double precision,
    PRIMARY KEY (namespace, session_id)
);

CREATE TABLE memories_archive (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id          text NOT NULL,
    namespace   text NOT NULL,
    record      text NOT NULL,                      -- the full record as JSON
    key         text,
    supersedes  text,
    source_ids  jsonb NOT NULL DEFAULT '[]',
    created_at  double precision NOT NULL,
    archived_at double precision NOT NULL,
    fts         tsvector NOT NULL
);
CREATE INDEX memories_archive_ns_id ON memories_archive (namespace, id);
CREATE INDEX memories_archive_ns_key ON memories_archive (namespace, key);
CREATE INDEX memories_archive_ns_supersedes ON memories_archive (namespace, supersedes);
CREATE INDEX memories_archive_fts ON memories_archive USING gin (fts);

CREATE TABLE maintenance_runs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace   text NOT NULL,
    job         text NOT NULL,
    started_at  double precision NOT NULL,
    finished_at double precision,
    outcome     text,
    counts      text NOT NULL DEFAULT '{}',
    message     text
);
CREATE INDEX maintenance_runs_ns ON maintenance_runs (namespace, started_at);

CREATE TABLE meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);

-- Memories waiting for their vector (SQLite 004, ADR 0013); gone with their memory.
CREATE TABLE vector_queue (
    seq        bigint PRIMARY KEY REFERENCES memories (seq) ON DELETE CASCADE,
    namespace  text NOT NULL,
    token      bigint NOT NULL,
    queued_at  double precision NOT NULL,
    attempts   integer NOT NULL DEFAULT 0,
    last_error text
);
CREATE INDEX vector_queue_ns ON vector_queue (namespace, seq);

-- Provenance as an index (SQLite 010): one row per (source, derived memory), live or archived.
CREATE TABLE memory_sources (
    namespace text NOT NULL,
    source_id text NOT NULL,
    memory_id text NOT NULL,
    archived  boolean NOT NULL DEFAULT false,
    PRIMARY KEY (namespace, source_id, memory_id, archived)
);
CREATE INDEX memory_sources_memory ON memory_sources (namespace, memory_id, archived);

-- Triggers keep memory_sources and the vector queue right whichever statement writes a row.
CREATE FUNCTION clawmem_sources() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    is_archive boolean := TG_TABLE_NAME = 'memories_archive';
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        DELETE FROM memory_sources WHERE namespace = OLD.namespace AND memory_id = OLD.id
            AND archived = is_archive;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.source_ids <> '[]'::jsonb THEN
        INSERT INTO memory_sources
        SELECT NEW.namespace, s.value #>> '{}', NEW.id, is_archive
        FROM jsonb_array_elements(NEW.source_ids) s WHERE jsonb_typeof(s.value) = 'string'
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER memories_sources_ai AFTER INSERT OR DELETE ON memories
    FOR EACH ROW EXECUTE FUNCTION clawmem_sources();
CREATE TRIGGER memories_sources_au AFTER UPDATE ON memories FOR EACH ROW
    WHEN (OLD.source_ids IS DISTINCT FROM NEW.source_ids OR OLD.id IS DISTINCT FROM NEW.id)
    EXECUTE FUNCTION clawmem_sources();
CREATE TRIGGER memories_archive_sources AFTER INSERT OR DELETE ON memories_archive
    FOR EACH ROW EXECUTE FUNCTION clawmem_sources();

-- Text that changes needs a new vector, once this database holds vectors at all.
CREATE FUNCTION clawmem_requeue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM meta WHERE key = 'embedding_model') THEN
        INSERT INTO vector_queue (seq, namespace, token, queued_at)
        VALUES (NEW.seq, NEW.namespace, floor(random() * 4611686018427387903)::bigint,
                extract(epoch FROM clock_timestamp()))
        ON CONFLICT (seq) DO UPDATE SET token = excluded.token, queued_at = excluded.queued_at,
            attempts = 0, last_error = NULL;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER memories_requeue AFTER UPDATE OF key, content ON memories FOR EACH ROW
    WHEN (NEW.valid_until IS NULL AND (OLD.content IS DISTINCT FROM NEW.content
          OR OLD.key IS DISTINCT FROM NEW.key))
    EXECUTE FUNCTION clawmem_requeue();
