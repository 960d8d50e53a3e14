-- 014: 003's provenance columns (ADR 0024): the narrative active when a memory was created and
-- the task that produced it, another system's ids kept as text. Rows written before this
-- migration have neither (NULL); the koshi importer used to keep them in metadata, which stays
-- as it was. Recall and list filter by namespace and value: partial indexes, since most
-- memories have neither (a comparison `narrative_id = ?` lets SQLite use them).
ALTER TABLE memories ADD COLUMN narrative_id TEXT;
ALTER TABLE memories ADD COLUMN task_id TEXT;
CREATE INDEX memories_ns_narrative ON memories(namespace, narrative_id)
    WHERE narrative_id IS NOT NULL;
CREATE INDEX memories_ns_task ON memories(namespace, task_id) WHERE task_id IS NOT NULL;
