// Loading a plain SQL dump (./dump.ts's, or pg_dump's plain format) into the
// database, as `psql -v ON_ERROR_STOP=1 --single-transaction -f` would: every
// statement in one transaction, so a dump that fails part way leaves nothing
// behind. COPY ... FROM stdin data goes through PGlite's /dev/blob device
// (its backend cannot read COPY data from the protocol; see
// ../../wire/copy-in.ts). Tables the dump creates are tracked like any other,
// so its rows are in the change log too.
//
// A database is seeded once: the load records itself in _tabgres.imports in
// the same transaction, and a database that already has tables of its own
// is never loaded into (its objects would collide with the dump's).

import type { PGlite } from '@electric-sql/pglite'
import { PgError } from '../../protocol/errors'
import { ENGINE_SESSION_SQL } from '../install'
import { literal, run, whenIdle, BUSY, backoff, withCopyData, COPY_DATA_SOURCE } from '../replication/exclusive'
import { USER_NS } from './catalog'
import { splitScript, type ScriptItem } from './script'

/** psql commands a dump may hold that change nothing here (pg_dump 17.6+ writes \restrict / \unrestrict). */
const HARMLESS_META = /^(un)?restrict\b/

const USER_RELATIONS = `SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f') AND ${USER_NS}`

export type SeedOutcome = 'loaded' | 'already-loaded'

/**
 * Loads `script` unless this database was seeded before. Fails with 55000
 * when the database already has tables or sequences of its own, and with
 * the failing statement's own error (nothing loaded) when the dump does not load.
 */
export async function seedFromDump(db: PGlite, script: string): Promise<SeedOutcome> {
  const items = splitScript(script)
  for (const item of items) {
    if (item.kind === 'meta' && !HARMLESS_META.test(item.command)) {
      throw new PgError({ code: '0A000', message: `the dump holds the psql command \\${item.command.split(/\s/)[0]}, which a dump loaded here cannot run` })
    }
  }
  for (let attempt = 0; ; attempt++) {
    const r = await whenIdle(db, () => load(db, items, script.length))
    if (r !== BUSY) return r
    await backoff(attempt)
  }
}

async function load(db: PGlite, items: ScriptItem[], bytes: number): Promise<SeedOutcome> {
  const one = async (sql: string) => (await run(db, sql, false)).sets.at(-1) ?? []
  await one(`CREATE TABLE IF NOT EXISTS _tabgres.imports (at timestamptz NOT NULL DEFAULT now(), bytes bigint NOT NULL)`)
  if ((await one('SELECT count(*) FROM _tabgres.imports'))[0][0] !== '0') return 'already-loaded'
  if ((await one(USER_RELATIONS))[0][0] !== '0') {
    throw new PgError({ code: '55000', message: 'the database already has tables of its own: a dump is loaded only into a new database' })
  }
  await one('BEGIN')
  try {
    for (const item of items) {
      if (item.kind === 'sql') await one(item.text)
      else if (item.kind === 'copy') await copy(db, item.text, item.data)
    }
    await one(`INSERT INTO _tabgres.imports (bytes) VALUES (${literal(String(bytes))}::bigint)`)
    await run(db, 'COMMIT', true)
    return 'loaded'
  } catch (e) {
    await one('ROLLBACK').catch(() => {})
    throw e
  } finally {
    // A dump sets search_path and more for its session, which is every session's here.
    await one(`RESET ALL; ${ENGINE_SESSION_SQL}`)
  }
}

async function copy(db: PGlite, statement: string, data: string): Promise<void> {
  await withCopyData(db, [data], () => run(db, statement.replace(/\bFROM\s+stdin\b/i, `FROM ${COPY_DATA_SOURCE}`), false))
}
