// db.dump() through the worker, and openDatabase(name, { from }) loading a
// dump into a new database once: from its text, a Blob or a URL.

import { describe, expect, it } from 'vitest'
import { openDatabase } from '../../src/client'

const run = Date.now().toString(36)
const rowsOf = async (db: Awaited<ReturnType<typeof openDatabase>>) =>
  (await db.query<{ r: string }>(`SELECT t::text AS r FROM public.items t ORDER BY id`)).rows.map((r) => r.r)

describe('dump and from', () => {
  it('a dump opens as a new database, once, from its text, a Blob or a URL', async () => {
    const source = await openDatabase(`dump_source_${run}`)
    await source.exec(`CREATE TABLE public.items (id serial PRIMARY KEY, name text, tags text[]);
      INSERT INTO public.items (name, tags) VALUES ('one', '{a}'), (E'two\\tlines\\nhere', NULL)`)
    const dump = await source.dump()
    expect(dump).toContain('COPY public.items (id, name, tags) FROM stdin;')
    const expected = await rowsOf(source)
    await source.close()

    const sources: [string, string | Blob | URL][] = [
      ['text', dump],
      ['blob', new Blob([dump])],
      ['url', new URL(URL.createObjectURL(new Blob([dump])))],
    ]
    for (const [kind, from] of sources) {
      const name = `dump_copy_${kind}_${run}`
      const copy = await openDatabase(name, { from })
      expect(copy.seeded).toBe('loaded')
      expect(await rowsOf(copy)).toEqual(expected)
      // The sequence goes on where the source left it.
      expect((await copy.query<{ id: number }>(`INSERT INTO public.items (name) VALUES ('three') RETURNING id`)).rows).toEqual([{ id: 3 }])
      await copy.close()
      // Opened again with the same dump: already loaded, nothing loaded twice.
      const again = await openDatabase(name, { from: dump })
      expect(again.seeded).toBe('already-loaded')
      expect((await rowsOf(again)).length).toBe(3)
      await again.close()
    }
  })

  it('a database with tables of its own is not loaded into (55000), and stays open-able', async () => {
    const name = `dump_busy_${run}`
    const db = await openDatabase(name)
    await db.exec(`CREATE TABLE mine (id int)`)
    await db.close()
    await expect(openDatabase(name, { from: `CREATE TABLE public.items (id int);\n` })).rejects.toMatchObject({ code: '55000' })
    const reopened = await openDatabase(name)
    expect((await reopened.query(`SELECT to_regclass('public.items') AS t`)).rows).toEqual([{ t: null }])
    await reopened.close()
  })
})
