-- 003: when a memory entered this store's live set (first store, import, restore from the
-- archive). Idle clocks (idle purge, hygiene, confidence decay) and recency start no earlier,
-- so an import of old memories never makes them look idle to this store. Rows stored before
-- this column existed arrived no later than their last write: that is their best estimate.
ALTER TABLE memories ADD COLUMN stored_at REAL NOT NULL DEFAULT 0;
UPDATE memories SET stored_at = MAX(created_at, updated_at);
