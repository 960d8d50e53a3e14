-- 002: a journal of vector changes. Each process keeps an in-RAM matrix of a namespace's
-- vectors (vectors/matrix.py); the journal lets it apply other processes' writes and deletes
-- incrementally instead of reloading everything. Rows hold row numbers only, never text.
CREATE TABLE vec_log (
    gen       INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT NOT NULL,
    seq       INTEGER NOT NULL,
    op        TEXT NOT NULL              -- 'u' upserted, 'd' deleted
);
CREATE INDEX vec_log_ns ON vec_log(namespace, gen);
CREATE TRIGGER memories_vec_log_ad AFTER DELETE ON memories BEGIN
    INSERT INTO vec_log(namespace, seq, op) VALUES (old.namespace, old.seq, 'd');
END;
