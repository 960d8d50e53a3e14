-- 013: recall's time filters and the memories of a period a query names (ADR 0017) select
-- by when the remembered thing happened: its event_time, or its created_at when it has none.
-- SQLite uses an expression index only where a query repeats the expression exactly
-- (store/base.py EVENT_OR_CREATED).
CREATE INDEX memories_ns_when ON memories(namespace, COALESCE(event_time, created_at));
