-- 008: entity aliases in an indexed table, so finding an entity by name or alias is an index
-- lookup instead of a scan of every entity of the namespace through json_each (recall ran
-- that scan on every query: 15-37 ms at 20k memories). The JSON column stays the source of
-- truth; the triggers keep this table equal to it whoever writes `entities` (the entity index,
-- forget, importers), and delete an alias with its entity. `key` is lower() of the alias, the
-- ASCII fold that entities.base.alias_key computes.
CREATE TABLE entity_aliases (
    namespace TEXT NOT NULL,
    key       TEXT NOT NULL,
    entity_id TEXT NOT NULL,
    PRIMARY KEY (namespace, key, entity_id)
) WITHOUT ROWID;
CREATE INDEX entity_aliases_entity ON entity_aliases(entity_id);
INSERT OR IGNORE INTO entity_aliases
    SELECT e.namespace, lower(j.value), e.id FROM entities e, json_each(e.aliases) j;
CREATE TRIGGER entity_aliases_insert AFTER INSERT ON entities BEGIN
    INSERT OR IGNORE INTO entity_aliases
        SELECT new.namespace, lower(value), new.id FROM json_each(new.aliases);
END;
CREATE TRIGGER entity_aliases_update AFTER UPDATE OF aliases, namespace ON entities BEGIN
    DELETE FROM entity_aliases WHERE entity_id = old.id;
    INSERT OR IGNORE INTO entity_aliases
        SELECT new.namespace, lower(value), new.id FROM json_each(new.aliases);
END;
CREATE TRIGGER entity_aliases_delete AFTER DELETE ON entities BEGIN
    DELETE FROM entity_aliases WHERE entity_id = old.id;
END;
