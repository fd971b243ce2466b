import { describe, expect, it } from 'vitest'
import { openDatabase, PgError } from '../../src/client'

describe('smoke', () => {
  it('opens, queries, errors keep their code', async () => {
    const db = await openDatabase('smoke')
    await db.exec('CREATE TABLE t (id int primary key, v text)')
    await db.query('INSERT INTO t VALUES ($1, $2)', [1, 'a'])
    const r = await db.query<{ v: string }>('SELECT v FROM t')
    expect(r.rows).toEqual([{ v: 'a' }])
    const err = await db.query('INSERT INTO t VALUES (1, $1)', ['b']).catch((e) => e)
    expect(err).toBeInstanceOf(PgError)
    expect(err.code).toBe('23505')
    await db.close()
  })
})
