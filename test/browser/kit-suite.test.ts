// A generated suite of 100 tests, each on its own fresh database from the
// testing kit, as an application's browser tests would use it: the suite's
// total time is the kit's cost per test (README, "Testing kit").

import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest'
import { createTestKit } from '../../src/testing/browser'
import type { Database } from '../../src/client'

const kit = createTestKit()
afterAll(() => kit.close())

let db: Database
beforeEach(async () => {
  db = await kit.fresh()
})
afterEach(async () => {
  await db.close()
})

describe('generated suite: a fresh database per test', () => {
  for (let i = 1; i <= 100; i++) {
    it(`test ${i}: writes ${i} rows into an empty database`, async () => {
      // Fresh: no table of an earlier test is here.
      expect((await db.query(`SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = 'public'`)).rows).toEqual([{ n: 0 }])
      await db.exec('CREATE TABLE todo (id int PRIMARY KEY, title text NOT NULL, done boolean DEFAULT false)')
      await db.query(`INSERT INTO todo (id, title) SELECT g, 'todo ' || g FROM generate_series(1, $1::int) g`, [i])
      await db.query('UPDATE todo SET done = true WHERE id % 2 = 0')
      const { rows } = await db.query<{ n: number; done: number }>('SELECT count(*)::int AS n, count(*) FILTER (WHERE done)::int AS done FROM todo')
      expect(rows).toEqual([{ n: i, done: Math.floor(i / 2) }])
    })
  }
})
