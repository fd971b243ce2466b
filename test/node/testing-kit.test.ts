// tabgres/testing in Node: fresh in-memory databases from the template's
// files, captured, separate, and all closed by kit.close().

import { afterAll, describe, expect, it } from 'vitest'
import { createTestKit } from '../../src/testing/node'
import { runReplicationCommand } from '../../src/engine/replication/walsender'

describe('testing kit (Node)', async () => {
  const kit = await createTestKit()
  afterAll(() => kit.close())

  it('each database is new, empty, separate and captured', async () => {
    const a = await kit.fresh()
    // The engine is installed: replication commands work on it. (A slot first:
    // without one, captured changes are discarded, as WAL no slot needs.)
    const slot = await runReplicationCommand('CREATE_REPLICATION_SLOT s LOGICAL pgoutput', a)
    expect(slot.rows[0][0]).toBe('s')
    await a.exec('CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1); CHECKPOINT')
    // Made after a wrote to the files they both started from (catalog, WAL,
    // control file): b must see none of it (template-image.ts: copy on write).
    const b = await kit.fresh()
    expect((await b.query(`SELECT to_regclass('public.t') IS NULL AS missing`)).rows).toEqual([{ missing: true }])
    await b.exec('CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t VALUES (2, $$b$$)')
    expect((await a.query('SELECT * FROM t')).rows).toEqual([{ id: 1 }])
    expect((await b.query('SELECT * FROM t')).rows).toEqual([{ id: 2, v: 'b' }])
    expect((await a.query(`SELECT op::text AS op FROM _tabgres.changes WHERE relid = 't'::regclass`)).rows).toEqual([{ op: 'I' }])
    // The kits' smaller shared buffers (engine/start-params.ts, TEST_START_PARAMS).
    expect((await a.query('SHOW shared_buffers')).rows).toEqual([{ shared_buffers: '2MB' }])
    await a.close()
    await b.close()
  })

  it('close() ends every database it made, spares and forgotten ones included', async () => {
    const other = await createTestKit({ prewarm: 2 })
    const left = await other.fresh()
    await other.close()
    expect(left.closed).toBe(true)
    await expect(other.fresh()).rejects.toThrow(/closed/)
  })
})
