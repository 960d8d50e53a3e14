-- 001: the unified data model of DESIGN.md. Every table later issues fill is created here, so
-- nothing has to be migrated away. Times are Unix epoch seconds (REAL).

CREATE TABLE memories (
    seq            INTEGER PRIMARY KEY,          -- internal rowid: FTS and vec0 key on it
    id             TEXT NOT NULL,                -- public id, unique per namespace
    namespace      TEXT NOT NULL,
    key            TEXT,                         -- unique per namespace, upsert target (000)
    kind           TEXT NOT NULL,
    content        TEXT NOT NULL,
    tags           TEXT NOT NULL DEFAULT '[]',   -- JSON array
    metadata       TEXT NOT NULL DEFAULT '{}',   -- JSON object (001 SearchByMetadata)
    source         TEXT,                         -- provenance tag (003)
    source_role    TEXT,                         -- user | agent name (004)
    source_ids     TEXT NOT NULL DEFAULT '[]',   -- provenance list (004)
    session_id     TEXT,
    created_at     REAL NOT NULL,
    event_time     REAL,
    updated_at     REAL NOT NULL,
    last_accessed  REAL,
    access_count   INTEGER NOT NULL DEFAULT 0,
    score          INTEGER NOT NULL DEFAULT 0,   -- reinforcement (003)
    confidence     REAL NOT NULL DEFAULT 1.0,    -- 004
    decay_rate     REAL NOT NULL DEFAULT 0.1,    -- 0 = protected (004)
    valid_until    REAL,                         -- set = invalidated (004)
    supersedes     TEXT                          -- id this memory corrects (004)
);
CREATE UNIQUE INDEX memories_ns_id ON memories(namespace, id);
CREATE UNIQUE INDEX memories_ns_key ON memories(namespace, key) WHERE key IS NOT NULL;
CREATE INDEX memories_ns_created ON memories(namespace, created_at);
CREATE INDEX memories_ns_kind ON memories(namespace, kind, created_at);
CREATE INDEX memories_ns_session ON memories(namespace, session_id);

CREATE VIRTUAL TABLE memories_fts USING fts5(
    key, content, tags, source,
    content='memories', content_rowid='seq',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, key, content, tags, source)
    VALUES (new.seq, new.key, new.content, new.tags, new.source);
END;
CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, key, content, tags, source)
    VALUES ('delete', old.seq, old.key, old.content, old.tags, old.source);
END;
-- Only the indexed columns re-index: recall's access bookkeeping must not rewrite FTS rows.
CREATE TRIGGER memories_au AFTER UPDATE OF key, content, tags, source ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, key, content, tags, source)
    VALUES ('delete', old.seq, old.key, old.content, old.tags, old.source);
    INSERT INTO memories_fts(rowid, key, content, tags, source)
    VALUES (new.seq, new.key, new.content, new.tags, new.source);
END;

-- Bidirectional links (000) with strength and origin (003 v2 co-recall). Stored once per
-- unordered pair, a_id < b_id.
CREATE TABLE links (
    namespace  TEXT NOT NULL,
    a_id       TEXT NOT NULL,
    b_id       TEXT NOT NULL,
    strength   REAL NOT NULL DEFAULT 1.0,
    origin     TEXT NOT NULL DEFAULT 'manual',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (namespace, a_id, b_id)
);
CREATE INDEX links_b ON links(namespace, b_id);

-- Entities (004).
CREATE TABLE entities (
    id             TEXT PRIMARY KEY,
    namespace      TEXT NOT NULL,
    canonical_name TEXT NOT NULL,
    norm_name      TEXT NOT NULL,
    type           TEXT NOT NULL,
    aliases        TEXT NOT NULL DEFAULT '[]',
    summary        TEXT,
    mention_count  INTEGER NOT NULL DEFAULT 1,
    protected      INTEGER NOT NULL DEFAULT 0,
    created_at     REAL NOT NULL,
    updated_at     REAL NOT NULL
);
CREATE UNIQUE INDEX entities_ns_name ON entities(namespace, norm_name, type);
CREATE TABLE memory_entities (
    namespace TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    PRIMARY KEY (namespace, memory_id, entity_id)
);
CREATE INDEX memory_entities_entity ON memory_entities(entity_id);

-- History store (001): messages and one compaction summary per session.
CREATE TABLE messages (
    namespace  TEXT NOT NULL,
    session_id TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    role       TEXT NOT NULL,
    content    TEXT NOT NULL,
    tool_calls TEXT,
    metadata   TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL,
    PRIMARY KEY (namespace, session_id, seq)
);
CREATE TABLE summaries (
    namespace  TEXT NOT NULL,
    session_id TEXT NOT NULL,
    summary    TEXT NOT NULL,
    updated_at REAL NOT NULL,
    PRIMARY KEY (namespace, session_id)
);

-- Session consolidation state (004 sessions_consolidations).
CREATE TABLE sessions (
    namespace       TEXT NOT NULL,
    session_id      TEXT NOT NULL,
    first_seen_at   REAL NOT NULL,
    consolidated_at REAL,
    PRIMARY KEY (namespace, session_id)
);

-- Archive for size-based pruning (003); searchable with its own FTS index.
CREATE TABLE memories_archive (
    seq         INTEGER PRIMARY KEY,
    id          TEXT NOT NULL,
    namespace   TEXT NOT NULL,
    record      TEXT NOT NULL,     -- the full record as JSON
    key         TEXT,
    content     TEXT NOT NULL,
    tags        TEXT NOT NULL DEFAULT '[]',
    source      TEXT,
    archived_at REAL NOT NULL
);
CREATE INDEX memories_archive_ns ON memories_archive(namespace);
CREATE VIRTUAL TABLE memories_archive_fts USING fts5(
    key, content, tags, source,
    content='memories_archive', content_rowid='seq',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_archive_ai AFTER INSERT ON memories_archive BEGIN
    INSERT INTO memories_archive_fts(rowid, key, content, tags, source)
    VALUES (new.seq, new.key, new.content, new.tags, new.source);
END;
CREATE TRIGGER memories_archive_ad AFTER DELETE ON memories_archive BEGIN
    INSERT INTO memories_archive_fts(memories_archive_fts, rowid, key, content, tags, source)
    VALUES ('delete', old.seq, old.key, old.content, old.tags, old.source);
END;

-- Scheduled maintenance runs: job, start, end, counts, outcome.
CREATE TABLE maintenance_runs (
    id          INTEGER PRIMARY KEY,
    namespace   TEXT NOT NULL,
    job         TEXT NOT NULL,
    started_at  REAL NOT NULL,
    finished_at REAL,
    outcome     TEXT,
    counts      TEXT NOT NULL DEFAULT '{}',
    message     TEXT
);

-- Database-level settings (004 memory_metadata): embedding model and dimension, etc.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
