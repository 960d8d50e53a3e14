-- PostgreSQL 006: no memory text in the planner's statistics. ANALYZE (autovacuum runs it)
-- copies sample values of every column into the catalog pg_statistic: most common values,
-- histogram bounds, a tsvector's most common lexemes. Forgotten text stayed there, in a
-- catalog only a superuser can rewrite, and ANALYZE of a table that became empty keeps the
-- old rows. No query here filters these columns by value except keyword search, whose @@
-- then uses PostgreSQL's default selectivity (the GIN index is still chosen; see
-- docs/postgres.md, "Forget, and what PostgreSQL keeps").
ALTER TABLE memories ALTER COLUMN content SET STATISTICS 0,
    ALTER COLUMN key SET STATISTICS 0, ALTER COLUMN tags SET STATISTICS 0,
    ALTER COLUMN metadata SET STATISTICS 0, ALTER COLUMN meta_cmp SET STATISTICS 0,
    ALTER COLUMN source SET STATISTICS 0, ALTER COLUMN fts SET STATISTICS 0;
ALTER TABLE memories_archive ALTER COLUMN record SET STATISTICS 0,
    ALTER COLUMN key SET STATISTICS 0, ALTER COLUMN fts SET STATISTICS 0;
ALTER TABLE entities ALTER COLUMN canonical_name SET STATISTICS 0,
    ALTER COLUMN norm_name SET STATISTICS 0, ALTER COLUMN aliases SET STATISTICS 0,
    ALTER COLUMN alias_keys SET STATISTICS 0, ALTER COLUMN summary SET STATISTICS 0;
ALTER TABLE messages ALTER COLUMN content SET STATISTICS 0,
    ALTER COLUMN tool_calls SET STATISTICS 0, ALTER COLUMN metadata SET STATISTICS 0;
ALTER TABLE summaries ALTER COLUMN summary SET STATISTICS 0;
