// zero-cache's SQLite in Chromium (src/zero/sqlite): the module fetched from
// beside its loader, wal2 readers and writers in one instance, and the files
// kept in IndexedDB so that a reload finds every committed transaction and
// nothing of one that was open when the page went away.

import { describe, expect, it } from 'vitest'
import { instantiateSqlite } from '../../src/zero/sqlite/binding'
import Database, { useSqlite } from '../../src/zero/sqlite/database'
import { MemoryFiles } from '../../src/zero/sqlite/files'
import { IdbFileStore } from '../../src/zero/sqlite/idb-store'
import { compileSqlite } from '../../src/zero/sqlite/load'
import { Persister } from '../../src/zero/sqlite/persist'

/** A page's start: the files IndexedDB holds, in a new instance. */
async function boot(storeName: string) {
  const store = await IdbFileStore.open(storeName)
  const files = new MemoryFiles()
  await store.loadInto(files)
  useSqlite(await instantiateSqlite(await compileSqlite(), files))
  return { store, files, persister: new Persister(files, store) }
}

describe('zero-cache’s SQLite in Chromium', () => {
  it('runs wal2 with a BEGIN CONCURRENT reader, and reads blobs as Uint8Array', async () => {
    const { store, persister } = await boot(`zero-sqlite-a-${crypto.randomUUID()}`)
    const writer = new Database('/replica.db')
    expect(writer.pragma('journal_mode = wal2', { simple: true })).toBe('wal2')
    writer.exec('create table t (id integer primary key, b blob)')
    writer.prepare('insert into t values (1, ?)').run(new Uint8Array([1, 2, 3]))
    const reader = new Database('/replica.db')
    reader.exec('BEGIN CONCURRENT')
    expect(reader.prepare('select count(*) from t').pluck().get()).toBe(1)
    writer.prepare('insert into t values (2, null)').run()
    expect(reader.prepare('select count(*) from t').pluck().get()).toBe(1)
    reader.exec('COMMIT')
    expect(reader.prepare('select count(*) from t').pluck().get()).toBe(2)
    const blob = reader.prepare('select b from t where id = 1').pluck().get()
    expect(blob).toBeInstanceOf(Uint8Array)
    expect([...(blob as Uint8Array)]).toEqual([1, 2, 3])
    reader.close()
    writer.close()
    await persister.close()
    store.close()
  })

  it('reloads from IndexedDB with every committed row and none of an open transaction', async () => {
    const name = `zero-sqlite-b-${crypto.randomUUID()}`
    const first = await boot(name)
    const db = new Database('/replica.db')
    db.pragma('journal_mode = wal2')
    db.pragma('cache_size = 10')
    db.exec('create table t (id integer primary key, pad text)')
    const add = db.prepare('insert into t (pad) values (?)')
    for (let round = 0; round < 5; round++) {
      db.transaction(() => {
        for (let i = 0; i < 100; i++) add.run(`c${round}`.repeat(200))
      })()
      await first.persister.flush()
    }
    db.exec('BEGIN')
    for (let i = 0; i < 400; i++) add.run('u'.repeat(200))
    // The page goes away here, its transaction open and partly spilled into the wal.
    await first.persister.flush()
    first.store.close()

    const second = await boot(name)
    const again = new Database('/replica.db')
    expect(again.prepare('select count(*) from t').pluck().get()).toBe(500)
    expect(again.prepare("select count(*) from t where pad like 'u%'").pluck().get()).toBe(0)
    expect(again.pragma('integrity_check', { simple: true })).toBe('ok')
    expect(again.pragma('journal_mode', { simple: true })).toBe('wal2')
    again.close()
    await second.persister.close()
    second.store.close()
  })
})
