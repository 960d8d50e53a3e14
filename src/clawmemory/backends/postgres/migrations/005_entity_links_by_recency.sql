-- PostgreSQL 005: an entity's most recent links, read backwards along (entity_id, linked), so
-- recall's entity list costs what its limit asks for, not what the entity's mention count is
-- (SQLite reads memory_entities(entity_id, rowid) the same way since its migration 008). The
-- new index also serves every lookup by entity_id alone, so the old one goes.
CREATE INDEX IF NOT EXISTS memory_entities_entity_linked ON memory_entities (entity_id, linked);
DROP INDEX IF EXISTS memory_entities_entity;
