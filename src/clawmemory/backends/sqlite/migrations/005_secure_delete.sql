-- 005: forget means gone from the bytes. FTS5's 'secure-delete' removes a deleted row's tokens
-- from the index itself instead of leaving them in old segments under a delete marker, and
-- 'optimize' merges away what earlier deletes left behind (PRAGMA secure_delete, set on every
-- connection, zeroes the pages this frees). The index on supersedes finds a correction chain
-- without scanning the namespace.
INSERT INTO memories_fts(memories_fts, rank) VALUES ('secure-delete', 1);
INSERT INTO memories_archive_fts(memories_archive_fts, rank) VALUES ('secure-delete', 1);
INSERT INTO memories_fts(memories_fts) VALUES ('optimize');
INSERT INTO memories_archive_fts(memories_archive_fts) VALUES ('optimize');
CREATE INDEX memories_ns_supersedes ON memories(namespace, supersedes) WHERE supersedes IS NOT NULL;
