// Engine bugs found by the differential replica fuzz (test/fuzz/replica.ts),
// each replayed on its own: the primary streams into a replica PGlite through
// the replica applier and both sides must be equal.

import { PGlite } from '@electric-sql/pglite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { compareDatabases, streamInto, type StreamedReplica } from '../support/replica'

let primary: PGlite
let replica: PGlite
let stream: StreamedReplica

beforeAll(async () => {
  primary = new PGlite()
  replica = new PGlite()
  stream = await streamInto(primary, replica, { slot: 's', publication: 'p' })
})

afterAll(async () => {
  await stream.stop()
  await primary.close()
  await replica.close()
})

describe('found by the replica fuzz', () => {
  it('a table with a column named x or tg_relid can be written and streams (the capture trigger read them as its own variables)', async () => {
    // Was: 42702 column reference "x" is ambiguous, on every INSERT, UPDATE and DELETE.
    await primary.exec(`CREATE TABLE amb (id int PRIMARY KEY, x int, tg_relid text, saved text, i int, t text)`)
    await primary.exec(`INSERT INTO amb VALUES (1, 10, 'r', 's', 2, 't'), (2, 20, NULL, NULL, NULL, NULL)`)
    await primary.exec(`UPDATE amb SET x = x + 1, tg_relid = 'changed'`)
    await primary.exec(`DELETE FROM amb WHERE x = 21`)
    await stream.catchUp()
    expect(await compareDatabases(primary, replica)).toBeNull()
    expect((await replica.query('SELECT id, x, tg_relid FROM amb')).rows).toEqual([{ id: 1, x: 11, tg_relid: 'changed' }])
  })

  it('a table or column whose name contains $b$ can be created and streams (it closed the capture function\'s dollar quote and the rest of the name ran as SQL)', async () => {
    // Was: CREATE TABLE failed with a syntax error raised from the event trigger.
    await primary.exec(`CREATE TABLE "dollar $b$ t" (id int PRIMARY KEY, "a$b$c" text, "q$b$; SELECT 1; --" int)`)
    await primary.exec(`INSERT INTO "dollar $b$ t" VALUES (1, '$b$', 1), (2, NULL, 2); UPDATE "dollar $b$ t" SET "a$b$c" = 'x' WHERE id = 2; DELETE FROM "dollar $b$ t" WHERE id = 1`)
    await stream.catchUp()
    expect(await compareDatabases(primary, replica)).toBeNull()
    expect((await replica.query('SELECT * FROM "dollar $b$ t"')).rows).toEqual([{ id: 2, a$b$c: 'x', 'q$b$; SELECT 1; --': 2 }])
  })
})
