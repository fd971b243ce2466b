// Names the capture SQL (the .sql files here) and the engine's TypeScript
// share. The SQL spells each value out, so that it runs in psql as it is;
// test/node/capture-sql.test.ts checks they agree.

/** The schema of SQL-visible shims (before pg_catalog on the search_path). */
export const SHIM_SCHEMA = '_tabgres_sql'

/** The channel the commit trigger NOTIFYs on (log.sql; replication/notifier.ts listens). */
export const COMMIT_CHANNEL = '_tabgres_commit'

/** The SQLSTATE of a control notice: a request from SQL to the engine, never shown to a client (wire/backend-filter.ts). */
export const CONTROL_SQLSTATE = 'TG000'

/** Where the engine lists the process IDs of live sessions, for pg_terminate_backend (PGlite's MEMFS). */
export const SESSIONS_FILE = '/tmp/tabgres/sessions.json'

/** The session-level advisory locks and the session running SQL now (PGlite's MEMFS; advisory.sql). */
export const ADVISORY_FILE = '/tmp/tabgres/advisory.json'

/** The message of the 55P03 that a waiting advisory lock function raises when another session holds the lock. */
export const ADVISORY_BUSY = 'advisory lock held by another session'

/** The engine's search_path: the shims before pg_catalog. */
export const SEARCH_PATH = `"$user", public, ${SHIM_SCHEMA}, pg_catalog`

/** Put the shims before pg_catalog, for this session and for later ones. */
export function searchPathSql(database: string): string {
  return `SET search_path = ${SEARCH_PATH}; ALTER DATABASE "${database.replace(/"/g, '""')}" SET search_path = ${SEARCH_PATH};`
}

/** Track every existing user table and snapshot publications (idempotent). */
export const TRACK_ALL_SQL = /* sql */ `
SELECT _tabgres.track(c.oid) FROM pg_class c
 WHERE _tabgres.is_user_table(c.oid)
   AND NOT EXISTS (SELECT 1 FROM _tabgres.relation_versions v WHERE v.relid = c.oid);
SELECT _tabgres.record_publications()
 WHERE NOT EXISTS (SELECT 1 FROM _tabgres.publication_versions);
`

/** Slots an older version kept in a table, read once into the slot file; then the table goes. */
export const LEGACY_SLOTS_SQL = /* sql */ `
SELECT slot_name, plugin, temporary::text, confirmed_flush_lsn::text, restart_lsn::text, created_at::text FROM _tabgres.slots`
