// The install is skipped when the database says (its install mark) that this
// version installed it with the same options, and runs again otherwise.

import { PGlite } from '@electric-sql/pglite'
import { afterEach, describe, expect, it } from 'vitest'
import { installChangeTracking, installMark } from '../../src/engine/install'

const opened: PGlite[] = []
afterEach(async () => {
  for (const db of opened.splice(0)) await db.close()
})

/** A capture function's body, to tell whether the install ran (it replaces every function). */
const body = async (db: PGlite) =>
  (await db.query<{ src: string }>(`SELECT prosrc AS src FROM pg_proc WHERE oid = '_tabgres.position()'::regprocedure`)).rows[0].src

describe('install mark', () => {
  it('skips the install SQL when the mark matches, runs it when the options or the mark differ', async () => {
    const db = new PGlite()
    opened.push(db)
    await installChangeTracking(db)
    const mark = (await db.query<{ m: string }>(`SELECT obj_description('_tabgres'::regnamespace, 'pg_namespace') AS m`)).rows[0].m
    expect(mark).toBe(installMark('postgres', []))
    const original = await body(db)

    // A stand-in body the install would replace: it stays when the install is skipped.
    const marker = `${original.replace(/\s+$/, '')} -- untouched`
    await db.query(`UPDATE pg_proc SET prosrc = $1 WHERE oid = '_tabgres.position()'::regprocedure`, [marker])
    await installChangeTracking(db)
    expect(await body(db)).toBe(marker)

    // Other excluded tables: installs again (and records them).
    await installChangeTracking(db, { excludeTables: ['skip\\_%'] })
    expect(await body(db)).toBe(original)
    expect((await db.query(`SELECT * FROM _tabgres.excluded_tables`)).rows).toEqual([{ pattern: 'skip\\_%' }])

    // No mark (an earlier version, or an install cut short): installs again.
    await db.query(`UPDATE pg_proc SET prosrc = $1 WHERE oid = '_tabgres.position()'::regprocedure`, [marker])
    await db.exec('COMMENT ON SCHEMA _tabgres IS NULL')
    await installChangeTracking(db, { excludeTables: ['skip\\_%'] })
    expect(await body(db)).toBe(original)
  })

  it('a reopened database is captured and its tables tracked without the install SQL', async () => {
    const db = new PGlite()
    opened.push(db)
    await installChangeTracking(db)
    await db.exec('CREATE TABLE t (id int PRIMARY KEY)')
    const image = await db.dumpDataDir('none')
    const again = await PGlite.create({ loadDataDir: image })
    opened.push(again)
    await installChangeTracking(again)
    await again.exec('INSERT INTO t VALUES (1)')
    const { rows } = await again.query<{ op: string }>(`SELECT op::text AS op FROM _tabgres.changes WHERE relid = 't'::regclass`)
    expect(rows).toEqual([{ op: 'I' }])
  })
})
