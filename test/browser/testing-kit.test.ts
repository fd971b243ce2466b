// tabgres/testing/browser in Chromium: a fresh in-memory database per test
// from one kit worker, isolated from the others, with capture and streams;
// watchStream's waits; closing frees the database in the worker.

import { afterAll, describe, expect, it } from 'vitest'
import { createTestKit, watchStream } from '../../src/testing/browser'

const kit = createTestKit()
afterAll(() => kit.close())

describe('testing kit (browser)', () => {
  it('each database is new, empty and separate', async () => {
    const a = await kit.fresh()
    const b = await kit.fresh()
    expect(a.name).not.toBe(b.name)
    expect(a.boot.fromTemplate).toBe(true)
    await a.exec('CREATE TABLE only_in_a (id int PRIMARY KEY); INSERT INTO only_in_a VALUES (1)')
    const inB = await b.query(`SELECT to_regclass('public.only_in_a') IS NULL AS missing`)
    expect(inB.rows).toEqual([{ missing: true }])
    expect((await a.query('SELECT count(*)::int AS n FROM only_in_a')).rows).toEqual([{ n: 1 }])
    await a.close()
    await b.close()
  })

  it('watchStream: the next transaction, and a position from pg_current_wal_lsn()', async () => {
    const db = await kit.fresh()
    await db.exec('CREATE TABLE todo (id int PRIMARY KEY, title text); CREATE PUBLICATION p FOR ALL TABLES')
    await db.createSlot('s')
    const watch = watchStream(await db.startReplication({ slot: 's', options: { proto_version: '1', publication_names: 'p' } }))
    await db.query(`INSERT INTO todo VALUES (1, 'a')`)
    const first = await watch.nextCommit()
    expect(first.messages.map((m) => m.tag)).toEqual(['R', 'I'])
    await db.query(`UPDATE todo SET title = 'b' WHERE id = 1`)
    await db.query(`DELETE FROM todo`)
    const { rows } = await db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')
    await watch.until(rows[0].lsn)
    expect(watch.transactions.map((t) => t.messages.map((m) => m.tag).join(''))).toEqual(['RI', 'U', 'D'])
    expect((await watch.nextCommit()).messages.map((m) => m.tag)).toEqual(['U'])
    // A wait that cannot be met ends at its limit and says what it waited for.
    await expect(watch.until('FF/0', 50)).rejects.toThrow(/no position FF\/0 within 50 ms/)
    await watch.close()
    await db.close()
  })

  it('closing a database frees it in the kit worker', async () => {
    const before = await kit.stats()
    const db = await kit.fresh()
    const during = await kit.stats()
    expect(during.live).toBe(before.live + 1)
    expect(during.wasmBytes).toBeGreaterThan(before.wasmBytes) // PGlite's heap, while open
    await db.close()
    expect((await kit.stats()).live).toBe(before.live)
    // A closed handle answers as a closed connection does.
    await expect(db.query('SELECT 1')).rejects.toMatchObject({ code: '08003' })
  })

  it('a kit worker that cannot load fails fresh() with the cause instead of waiting', async () => {
    const broken = createTestKit({ spawn: () => new Worker(new URL('./no-such-kit-worker.js', import.meta.url), { type: 'module' }) })
    try {
      await expect(broken.fresh()).rejects.toThrow(/testing kit's worker failed/)
      await expect(broken.stats()).rejects.toThrow(/testing kit's worker failed/)
    } finally {
      broken.close()
    }
  })
})
