"""Source layouts the migration tests and benchmarks build (docs/MIGRATION.md
names the version each mapping follows).

OpenClaw's legacy per-agent index (openclaw/openclaw src/memory/memory-schema.ts
at openclaw/openclaw@21df5089): meta, files, chunks with JSON embeddings;
with the embedding cache, chunks_fts (FTS5) and chunks_vec (sqlite-vec,
loaded by the caller) when indexes is true.

ClawhDF5's migration schema (redclawsystems/clawhdf5@befeeaa8
crates/clawhdf5-migrate: the schema its tests create in src/main.rs).

LangChain's SQLiteVec (langchain-ai/langchain-community@bc877730
libs/community/langchain_community/vectorstores/sqlitevec.py,
create_table_if_not_exists l. 76-106: its three statements, sqlite-vec
loaded by the caller).

LangGraph's SqliteStore (langgraph-checkpoint-sqlite 3.1.1,
langchain-ai/langgraph@b2926a0f libs/checkpoint-sqlite/langgraph/store/sqlite/
base.py: MIGRATIONS and VECTOR_MIGRATIONS, l. 41-87, in order, and the two
tables that count them).
"""
import json

OPENCLAW_LEGACY = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE files (path TEXT PRIMARY KEY, source TEXT NOT NULL DEFAULT 'memory', hash TEXT NOT NULL,
                    mtime INTEGER NOT NULL, size INTEGER NOT NULL);
CREATE TABLE chunks (id TEXT PRIMARY KEY, path TEXT NOT NULL, source TEXT NOT NULL DEFAULT 'memory',
                     start_line INTEGER NOT NULL, end_line INTEGER NOT NULL, hash TEXT NOT NULL,
                     model TEXT NOT NULL, text TEXT NOT NULL, embedding TEXT NOT NULL,
                     updated_at INTEGER NOT NULL);
"""
OPENCLAW_LEGACY_INDEXES = """
CREATE TABLE embedding_cache (provider TEXT NOT NULL, model TEXT NOT NULL, provider_key TEXT NOT NULL,
                     hash TEXT NOT NULL, embedding TEXT NOT NULL, dims INTEGER, updated_at INTEGER NOT NULL,
                     PRIMARY KEY (provider, model, provider_key, hash));
CREATE VIRTUAL TABLE chunks_fts USING fts5(text, id UNINDEXED, path UNINDEXED, source UNINDEXED,
                     model UNINDEXED, start_line UNINDEXED, end_line UNINDEXED);
CREATE VIRTUAL TABLE chunks_vec USING vec0(id TEXT PRIMARY KEY, embedding FLOAT[%d]);
"""
OPENCLAW_META = {"model": "text-embedding-3-small", "provider": "openai", "providerKey": "k",
                 "chunkTokens": 400, "chunkOverlap": 80}


def openclaw_legacy(db, dim, rows, vec_ids=(), indexes=True):
    """The legacy schema in db, its meta row (dim in vectorDims: returned),
    one files row, and rows (id, path, source, text, embedding JSON,
    updated_at) as chunks, each in chunks_fts too and, for vec_ids, in
    chunks_vec."""
    db.executescript(OPENCLAW_LEGACY + (OPENCLAW_LEGACY_INDEXES % dim if indexes else ""))
    meta = dict(OPENCLAW_META, vectorDims=dim)
    db.execute("INSERT INTO meta VALUES ('memory_index_meta_v1', ?)", (json.dumps(meta),))
    db.execute("INSERT INTO files VALUES ('MEMORY.md', 'memory', 'h', 1700000000000, 10)")
    for i, (cid, pth, src, text, emb, t) in enumerate(rows):
        db.execute("INSERT INTO chunks VALUES (?,?,?,?,?,?,?,?,?,?)",
                   (cid, pth, src, i + 1, i + 2, "h%d" % i, "text-embedding-3-small", text, emb, t))
        if indexes:
            db.execute("INSERT INTO chunks_fts(text, id, path, source, model, start_line, end_line) "
                       "VALUES (?,?,?,?,?,?,?)", (text, cid, pth, src, "m", 1, 2))
        if cid in vec_ids:
            db.execute("INSERT INTO chunks_vec(id, embedding) VALUES (?, ?)", (cid, emb))
    return meta

CLAWHDF5 = """
CREATE TABLE memory_chunks (id INTEGER PRIMARY KEY, chunk TEXT NOT NULL, embedding BLOB NOT NULL,
    source_channel TEXT DEFAULT 'api', timestamp REAL NOT NULL, session_id TEXT, tags TEXT DEFAULT '',
    deleted INTEGER DEFAULT 0);
CREATE TABLE sessions (id TEXT PRIMARY KEY, start_idx INTEGER, end_idx INTEGER, channel TEXT,
    timestamp REAL, summary TEXT);
CREATE TABLE entities (id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL,
    embedding_idx INTEGER DEFAULT -1);
CREATE TABLE relations (src INTEGER NOT NULL, tgt INTEGER NOT NULL, relation TEXT NOT NULL,
    weight REAL DEFAULT 1.0, timestamp REAL, FOREIGN KEY (src) REFERENCES entities(id),
    FOREIGN KEY (tgt) REFERENCES entities(id));
"""

LANGGRAPH = """
CREATE TABLE IF NOT EXISTS store_migrations (v INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS store (
    -- 'prefix' represents the doc's 'namespace'
    prefix text NOT NULL,
    key text NOT NULL,
    value text NOT NULL,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    PRIMARY KEY (prefix, key)
);
CREATE INDEX IF NOT EXISTS store_prefix_idx ON store (prefix);
ALTER TABLE store ADD COLUMN expires_at TIMESTAMP;
ALTER TABLE store ADD COLUMN ttl_minutes REAL;
CREATE INDEX IF NOT EXISTS idx_store_expires_at ON store (expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS vector_migrations (v INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS store_vectors (
    prefix text NOT NULL,
    key text NOT NULL,
    field_name text NOT NULL,
    embedding BLOB,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    PRIMARY KEY (prefix, key, field_name),
    FOREIGN KEY (prefix, key) REFERENCES store(prefix, key) ON DELETE CASCADE
);
"""


def langchain(db, table, dim):
    """SQLiteVec's tables for table, its vectors of dim."""
    db.execute("CREATE TABLE IF NOT EXISTS %s (rowid INTEGER PRIMARY KEY AUTOINCREMENT, text TEXT, "
               "metadata BLOB, text_embedding BLOB);" % table)
    db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS %s_vec USING vec0(rowid INTEGER PRIMARY KEY, "
               "text_embedding float[%d]);" % (table, dim))
    db.execute("CREATE TRIGGER IF NOT EXISTS %s_embed_text AFTER INSERT ON %s BEGIN INSERT INTO "
               "%s_vec(rowid, text_embedding) VALUES (new.rowid, new.text_embedding); END;" % (table, table, table))
