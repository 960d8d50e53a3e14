"""Keyword context on SQLite (ADR 0036): a dialogue turn is keyword-indexed with the words just
before it.

A turn is an episode with a session and no key (``backends.base.is_turn``). Its
``keyword_context`` column holds the last ``CONTEXT_CHARS`` characters of each of the
``CONTEXT_TURNS`` turns before it in its session (``backends.base.turn_context``), and the
full-text index reads that column as a field of its own, weighted by ``recall.weight_context``.
"Yes, twice last month!" is then found by "How often did Melanie go camping?" when the turn
before it asked about camping.

The context is written with the turn (``INSERT_IN_CONTEXT``) and rewritten by triggers when a
turn it quotes goes (forgotten, expired, archived) or changes its text, so no forgotten text
survives in a later turn's row or index entry. Forgetting a turn rewrites at most the
``CONTEXT_TURNS`` turns after it.
"""

from __future__ import annotations

from typing import Any

from clawmemory.backends.base import CONTEXT_CHARS, CONTEXT_TURNS
from clawmemory.backends.sqlite.sql import COLUMNS

__all__ = ["INSERT_IN_CONTEXT", "add_keyword_context"]


def _before(namespace: str, session: str, seq: str) -> str:
    """The context of a turn: the tails of the turns before it, as one scalar subquery."""
    return (
        "(SELECT COALESCE(group_concat(t, ' '), '') FROM (SELECT"
        f" substr(p.content, -{CONTEXT_CHARS}) AS t FROM memories p WHERE p.namespace ="
        f" {namespace} AND p.session_id = {session} AND p.kind = 'episode' AND p.key IS NULL"
        f"{seq} ORDER BY p.seq DESC LIMIT {CONTEXT_TURNS}))"
    )


# A new turn is the newest row of its session: every earlier turn is before it.
INSERT_IN_CONTEXT = (
    f"INSERT INTO memories ({', '.join(COLUMNS)}, keyword_context) VALUES"
    f" ({', '.join('?' * len(COLUMNS))}, {_before('?', '?', '')})"
)

# The turns after a turn that went or changed, which quote it: their context read again.
# Only rows holding a context are rewritten (a store with the context off has none).
_REWRITE = (
    "UPDATE memories SET keyword_context = {ctx} WHERE seq IN (SELECT n.seq FROM memories n"
    " WHERE n.namespace = {row}.namespace AND n.session_id = {row}.session_id AND n.seq >"
    " {row}.seq AND n.kind = 'episode' AND n.key IS NULL AND n.keyword_context <> ''"
    f" ORDER BY n.seq LIMIT {CONTEXT_TURNS});"
)
_TURN = "{row}.kind = 'episode' AND {row}.session_id IS NOT NULL AND {row}.key IS NULL"
_CTX = _before("memories.namespace", "memories.session_id", " AND p.seq < memories.seq")
_FIELDS = "key, content, tags, source, keyword_context"

_SCHEMA = (
    "DROP TRIGGER IF EXISTS memories_ai",
    "DROP TRIGGER IF EXISTS memories_ad",
    "DROP TRIGGER IF EXISTS memories_au",
    "DROP TABLE IF EXISTS memories_fts",
    f"""CREATE VIRTUAL TABLE memories_fts USING fts5(
    {_FIELDS},
    content='memories', content_rowid='seq',
    tokenize='porter unicode61 remove_diacritics 2'
)""",
    f"""CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, {_FIELDS})
    VALUES (new.seq, new.key, new.content, new.tags, new.source, new.keyword_context);
END""",
    f"""CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, {_FIELDS})
    VALUES ('delete', old.seq, old.key, old.content, old.tags, old.source, old.keyword_context);
END""",
    # Only the indexed columns re-index: recall's access bookkeeping must not rewrite FTS rows.
    f"""CREATE TRIGGER memories_au AFTER UPDATE OF {_FIELDS} ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, {_FIELDS})
    VALUES ('delete', old.seq, old.key, old.content, old.tags, old.source, old.keyword_context);
    INSERT INTO memories_fts(rowid, {_FIELDS})
    VALUES (new.seq, new.key, new.content, new.tags, new.source, new.keyword_context);
END""",
    f"""CREATE TRIGGER memories_context_ad AFTER DELETE ON memories
WHEN {_TURN.format(row='old')} BEGIN
    {_REWRITE.format(ctx=_CTX, row='old')}
END""",
    f"""CREATE TRIGGER memories_context_au AFTER UPDATE OF content ON memories
WHEN {_TURN.format(row='new')} BEGIN
    {_REWRITE.format(ctx=_CTX, row='new')}
END""",
)


def add_keyword_context(c: Any) -> None:
    """Migration 015: the column, every existing turn's context, and the full-text index
    rebuilt with the new field (FTS5 cannot add a column) with its secure delete kept on."""
    c.execute("ALTER TABLE memories ADD COLUMN keyword_context TEXT NOT NULL DEFAULT ''")
    for sql in _SCHEMA[:4]:  # no trigger may rewrite the index while the column is filled
        c.execute(sql)
    c.execute(f"UPDATE memories SET keyword_context = {_CTX} WHERE {_TURN.format(row='memories')}")
    for sql in _SCHEMA[4:]:
        c.execute(sql)
    c.execute("INSERT INTO memories_fts(memories_fts) VALUES ('rebuild')")
    c.execute("INSERT INTO memories_fts(memories_fts, rank) VALUES ('secure-delete', 1)")
