-- 010: provenance as an index. A memory's source_ids (004) name the memories it was derived
-- from (an extracted fact from its episodes, a synthesis note from its messages, a reflection
-- from the week's facts). Forgetting a source forgets what was derived from it alone, so
-- forget must find, by index, every memory naming a given source: one row per (source,
-- derived memory), live (archived = 0) or archived (archived = 1). Triggers fill it in the
-- same transaction as the record, whichever code path writes the record. Rows hold ids only.
CREATE TABLE memory_sources (
    namespace TEXT NOT NULL,
    source_id TEXT NOT NULL,
    memory_id TEXT NOT NULL,
    archived  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (namespace, source_id, memory_id, archived)
) WITHOUT ROWID;
CREATE INDEX memory_sources_memory ON memory_sources(namespace, memory_id, archived);

CREATE TRIGGER memory_sources_ai AFTER INSERT ON memories WHEN new.source_ids <> '[]' BEGIN
    INSERT OR IGNORE INTO memory_sources
    SELECT new.namespace, value, new.id, 0 FROM json_each(new.source_ids) WHERE type = 'text';
END;
CREATE TRIGGER memory_sources_ad AFTER DELETE ON memories WHEN old.source_ids <> '[]' BEGIN
    DELETE FROM memory_sources
    WHERE namespace = old.namespace AND memory_id = old.id AND archived = 0;
END;
-- Every replace sets every column: only a real change of the provenance re-indexes.
CREATE TRIGGER memory_sources_au AFTER UPDATE OF source_ids, namespace ON memories
WHEN old.source_ids IS NOT new.source_ids OR old.namespace IS NOT new.namespace BEGIN
    DELETE FROM memory_sources
    WHERE namespace = old.namespace AND memory_id = old.id AND archived = 0;
    INSERT OR IGNORE INTO memory_sources
    SELECT new.namespace, value, new.id, 0 FROM json_each(new.source_ids) WHERE type = 'text';
END;
CREATE TRIGGER memory_sources_archive_ai AFTER INSERT ON memories_archive
WHEN json_array_length(new.record, '$.source_ids') > 0 BEGIN
    INSERT OR IGNORE INTO memory_sources
    SELECT new.namespace, value, new.id, 1 FROM json_each(new.record, '$.source_ids')
    WHERE type = 'text';
END;
CREATE TRIGGER memory_sources_archive_ad AFTER DELETE ON memories_archive
WHEN json_array_length(old.record, '$.source_ids') > 0 BEGIN
    DELETE FROM memory_sources
    WHERE namespace = old.namespace AND memory_id = old.id AND archived = 1;
END;

INSERT OR IGNORE INTO memory_sources
SELECT m.namespace, j.value, m.id, 0 FROM memories m, json_each(m.source_ids) j
WHERE m.source_ids <> '[]' AND j.type = 'text';
INSERT OR IGNORE INTO memory_sources
SELECT a.namespace, j.value, a.id, 1 FROM memories_archive a, json_each(a.record, '$.source_ids') j
WHERE j.type = 'text';

-- An archived record is looked up by id (forget, restore, provenance) without scanning the
-- namespace's archive.
CREATE INDEX IF NOT EXISTS memories_archive_ns_id ON memories_archive(namespace, id);
