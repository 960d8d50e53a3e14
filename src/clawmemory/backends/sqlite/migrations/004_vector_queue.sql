-- 004: memories waiting for their vector (ADR 0013). A row is written in the same transaction
-- as its memory, or by the trigger below when a memory's text changes, and removed in the
-- transaction that stores the vector. A process killed in between leaves the row for the next
-- process that has the model loaded (the servers, `clawmem maintain`, `clawmem backfill`), and
-- `clawmem add` can store a memory without loading a model at all.
CREATE TABLE vector_queue (
    seq        INTEGER PRIMARY KEY,   -- memories.seq
    namespace  TEXT NOT NULL,
    token      INTEGER NOT NULL,      -- new on every (re)queue: a vector of older text is dropped
    queued_at  REAL NOT NULL,
    attempts   INTEGER NOT NULL DEFAULT 0,
    last_error TEXT
);
CREATE INDEX vector_queue_ns ON vector_queue(namespace, seq);
-- Whatever deletes a memory (forget, archive, a namespace) drops its queue row with it.
CREATE TRIGGER memories_vector_queue_ad AFTER DELETE ON memories BEGIN
    DELETE FROM vector_queue WHERE seq = old.seq;
END;
-- Text that changes needs a new vector, once this file holds vectors at all.
CREATE TRIGGER memories_vector_queue_au AFTER UPDATE OF key, content ON memories
WHEN new.valid_until IS NULL AND (old.content IS NOT new.content OR old.key IS NOT new.key)
    AND EXISTS (SELECT 1 FROM meta WHERE key = 'embedding_model')
BEGIN
    INSERT OR REPLACE INTO vector_queue (seq, namespace, token, queued_at)
    VALUES (new.seq, new.namespace, random(), (julianday('now') - 2440587.5) * 86400.0);
END;
