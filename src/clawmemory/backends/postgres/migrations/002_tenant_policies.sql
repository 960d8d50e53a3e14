-- PostgreSQL 002: row-level security as a second wall behind the namespace every query names.
-- A role listed in tenant_roles sees and writes only the rows of its namespaces. The owner of
-- the tables (the role that ran the migrations; what a single-tenant service connects as) is
-- not subject to these policies: PostgreSQL exempts a table's owner unless FORCE is set.
-- docs/postgres.md shows how to create a per-tenant role.
CREATE TABLE tenant_roles (
    role_name text NOT NULL,
    namespace text NOT NULL,
    PRIMARY KEY (role_name, namespace)
);
ALTER TABLE tenant_roles ENABLE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON tenant_roles USING (role_name = current_user);

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['memories', 'links', 'entities', 'memory_entities', 'messages',
        'summaries', 'sessions', 'memories_archive', 'maintenance_runs', 'vector_queue',
        'memory_sources']
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant ON %I USING (namespace IN (SELECT r.namespace'
                       ' FROM tenant_roles r WHERE r.role_name = current_user))', t);
    END LOOP;
END $$;
