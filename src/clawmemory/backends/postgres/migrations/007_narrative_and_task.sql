-- PostgreSQL 007: 003's provenance columns (ADR 0024; SQLite's migration 014): the narrative
-- active when a memory was created and the task that produced it, another system's ids kept
-- as text. Existing rows have neither (NULL). Recall and list filter by namespace and value;
-- most memories have neither, so the indexes are partial. Ids, not memory text: like
-- session_id they keep their planner statistics (migration 006 is about text).
ALTER TABLE memories ADD COLUMN IF NOT EXISTS narrative_id text,
    ADD COLUMN IF NOT EXISTS task_id text;
CREATE INDEX IF NOT EXISTS memories_ns_narrative ON memories (namespace, narrative_id)
    WHERE narrative_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_ns_task ON memories (namespace, task_id)
    WHERE task_id IS NOT NULL;
