-- PostgreSQL 003: recall's time filters (since/until) and the memories of a period a query
-- names select by when the remembered thing happened: its event_time, else its created_at
-- (SQLite's migration 013). The planner uses the index where a query repeats the expression.
CREATE INDEX IF NOT EXISTS memories_ns_when
    ON memories (namespace, (COALESCE(event_time, created_at)));
