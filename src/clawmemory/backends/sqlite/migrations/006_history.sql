-- 006: what the history store (001, clawmemory.history) needs beyond migration 001's tables.
-- A tool result names the call it answers (tool_call_id) and the tool (name); a compaction
-- summary records how many of the session's first messages it replaces (covers), so a restored
-- session gets the summary plus only the messages after it, not both.
ALTER TABLE messages ADD COLUMN tool_call_id TEXT;
ALTER TABLE messages ADD COLUMN name TEXT;
ALTER TABLE summaries ADD COLUMN covers INTEGER NOT NULL DEFAULT 0;
