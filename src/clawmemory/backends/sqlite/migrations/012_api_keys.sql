-- 012: API keys of `clawmem serve` (ADR 0016). One row per key: its public id, the SHA-256
-- digest of the whole key (never the key), its role and the namespaces it may use (`tenants`, a
-- JSON list, the first is the default). Revoked keys stay, marked, so `clawmem keys list`
-- shows what was revoked when. No memory text lives here: keys are credentials, and
-- forgetting memories or a namespace leaves them alone (`clawmem keys revoke` removes access).
CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    digest     TEXT NOT NULL,
    role       TEXT NOT NULL CHECK (role IN ('read', 'write', 'admin')),
    tenants    TEXT NOT NULL,
    label      TEXT,
    created_at REAL NOT NULL,
    revoked_at REAL
) WITHOUT ROWID;
