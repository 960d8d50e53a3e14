-- PostgreSQL 004: API keys of `clawmem serve` (ADR 0016; SQLite's migration 012). One row per
-- key: its public id, the SHA-256 digest of the whole key (never the key), its role and the
-- namespaces it may use (`tenants`, a JSON list, the first is the default). Revoked keys stay,
-- marked. No memory text lives here; forgetting a namespace leaves keys alone.
CREATE TABLE IF NOT EXISTS api_keys (
    id         text PRIMARY KEY,
    digest     text NOT NULL,
    role       text NOT NULL CHECK (role IN ('read', 'write', 'admin')),
    tenants    text NOT NULL,
    label      text,
    created_at double precision NOT NULL,
    revoked_at double precision
);
