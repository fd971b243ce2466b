// zero-cache's SQLite in the tab (src/zero/sqlite): the bedrock SQLite that
// @rocicorp/zero-sqlite3 ships, compiled to WebAssembly, behind that
// package's API. What zero-cache relies on: wal2 with several connections to
// one file, BEGIN CONCURRENT snapshots that stay put while another connection
// commits, better-sqlite3's binding and error rules, scan status for its
// planner, and files that reload crash-consistent.

import { readFileSync } from 'node:fs'
import { beforeAll, describe, expect, it } from 'vitest'
import { instantiateSqlite, type Sqlite } from '../../src/zero/sqlite/binding'
import Database, { SqliteError, useSqlite } from '../../src/zero/sqlite/database'
import { CHUNK, MemoryFiles, type FileChanges } from '../../src/zero/sqlite/files'

const wasm = readFileSync(new URL('../../src/zero/sqlite/sqlite3.wasm', import.meta.url))
let module: WebAssembly.Module
let sqlite: Sqlite

beforeAll(async () => {
  module = await WebAssembly.compile(wasm)
  sqlite = await instantiateSqlite(module)
  useSqlite(sqlite)
})

/** A fresh instance over `files`, as a reloaded tab would make one. */
async function reopen(files: MemoryFiles): Promise<void> {
  useSqlite(await instantiateSqlite(module, files))
}

/** What a store that applied every change in order would hand back on load. */
class Store {
  files = new Map<string, { size: number; chunks: Map<number, Uint8Array> }>()
  apply(c: FileChanges): void {
    for (const name of c.deleted) this.files.delete(name)
    for (const [name, from] of c.dropFrom) for (const i of [...(this.files.get(name)?.chunks.keys() ?? [])]) if (i >= from) this.files.get(name)!.chunks.delete(i)
    for (const { name, index, bytes } of c.chunks) {
      let f = this.files.get(name)
      if (!f) this.files.set(name, (f = { size: 0, chunks: new Map() }))
      f.chunks.set(index, bytes)
    }
    for (const [name, size] of c.sizes) {
      let f = this.files.get(name)
      if (!f) this.files.set(name, (f = { size: 0, chunks: new Map() }))
      f.size = size
    }
  }
  load(): MemoryFiles {
    const files = new MemoryFiles()
    for (const [name, f] of this.files) files.load(name, f.size, [...f.chunks].map(([i, b]) => [i, b.slice()] as [number, Uint8Array]))
    return files
  }
}

describe('the API of @rocicorp/zero-sqlite3', () => {
  it('is the bedrock SQLite that zero-sqlite3 ships', () => {
    const db = new Database(':memory:')
    const native = readFileSync(new URL('../../node_modules/@rocicorp/zero-sqlite3/deps/sqlite3/sqlite3.h', import.meta.url), 'utf8')
    const version = /#define SQLITE_VERSION\s+"([^"]+)"/.exec(native)![1]
    expect(db.prepare('select sqlite_version() v').pluck().get()).toBe(version)
    expect(sqlite.sourceId).toBe(/#define SQLITE_SOURCE_ID\s+"([^"]+)"/.exec(native)![1])
    db.close()
  })

  it('binds and reads values as better-sqlite3 does', () => {
    const db = new Database('/values.db')
    db.exec('create table t (id integer primary key, i integer, r real, s text, b blob, n)')
    const insert = db.prepare('insert into t (i, r, s, b, n) values (?, ?, ?, ?, ?)')
    const r = insert.run(7, 1.5, 'héllo ☃', new Uint8Array([0, 1, 255]), null)
    expect(r).toEqual({ changes: 1, lastInsertRowid: 1 })
    insert.run(2n ** 62n, 0, '', new Uint8Array(0), undefined)
    const rows = db.prepare('select i, r, s, b, n from t order by id').all() as Record<string, unknown>[]
    // Blobs come back as Node's Buffer where there is one, as natively.
    expect(rows[0]).toEqual({ i: 7, r: 1.5, s: 'héllo ☃', b: Buffer.from([0, 1, 255]), n: null })
    // Without safeIntegers an int64 reads back as the nearest double.
    expect(rows[1].i).toBe(2 ** 62)
    expect(db.prepare('select i from t where id = 2').safeIntegers().pluck().get()).toBe(2n ** 62n)
    expect(db.prepare('select i, s from t where id = :id').raw().get({ id: 1 })).toEqual([7, 'héllo ☃'])
    expect(db.prepare('select count(*) from t where i > @min and s = $s').pluck().get({ min: 1, s: '' })).toBe(1)
    expect([...db.prepare('select id from t order by id').pluck().iterate()]).toEqual([1, 2])
    expect(db.prepare('select i from t').columns()).toEqual([{ name: 'i', column: 'i', table: 't', database: 'main', type: 'INTEGER' }])
    db.close()
  })

  it('throws what the native addon throws', () => {
    const db = new Database('/errors.db')
    db.exec('create table t (id integer primary key)')
    db.prepare('insert into t values (1)').run()
    const dup = (() => {
      try {
        db.prepare('insert into t values (1)').run()
      } catch (e) {
        return e
      }
    })() as SqliteError
    expect(dup).toBeInstanceOf(SqliteError)
    expect(dup.code).toBe('SQLITE_CONSTRAINT_PRIMARYKEY')
    expect(dup.message).toBe('UNIQUE constraint failed: t.id')
    expect(() => db.prepare('select * from nope')).toThrow(expect.objectContaining({ code: 'SQLITE_ERROR', message: 'no such table: nope' }))
    expect(() => db.prepare('select 1; select 2')).toThrow(RangeError)
    expect(() => db.prepare(' -- nothing')).toThrow(RangeError)
    expect(db.prepare('select 1 -- trailing\n; /* and */').pluck().get()).toBe(1)
    expect(() => db.prepare('select ?').get()).toThrow('Too few parameter values were provided')
    expect(() => db.prepare('select ?').get(1, 2)).toThrow('Too many parameter values were provided')
    expect(() => db.prepare('select ?').get(true)).toThrow(TypeError)
    expect(() => db.prepare('insert into t values (2)').get()).toThrow(TypeError)
    expect(() => new Database('/missing.db', { fileMustExist: true })).toThrow(expect.objectContaining({ code: 'SQLITE_CANTOPEN' }))
    db.close()
  })

  it('runs transactions, nested ones as savepoints, and rolls back on a throw', () => {
    const db = new Database('/tx.db')
    db.exec('create table t (v)')
    const add = db.prepare('insert into t values (?)')
    const outer = db.transaction((v: number) => {
      add.run(v)
      try {
        db.transaction(() => {
          add.run(v + 1)
          throw new Error('inner')
        })()
      } catch {}
      expect(db.inTransaction).toBe(true)
    })
    outer(1)
    expect(db.inTransaction).toBe(false)
    expect(db.prepare('select v from t').pluck().all()).toEqual([1])
    db.transaction(() => {
      add.run(9)
    })()
    const failing = db.transaction(() => {
      add.run(10)
      throw new Error('boom')
    })
    expect(() => failing.immediate()).toThrow('boom')
    expect(db.prepare('select v from t order by v').pluck().all()).toEqual([1, 9])
    db.close()
  })

  it('reports scan status for zqlite’s cost model', () => {
    const db = new Database('/scan.db')
    db.exec('create table t (a, b); create index ta on t (a); with recursive n(v) as (select 1 union all select v + 1 from n where v < 50) insert into t select v, v from n')
    const stmt = db.prepare('select * from t where a > 10')
    stmt.all()
    expect(stmt.scanStatusV2(0, Database.SQLITE_SCANSTAT_NVISIT, Database.SQLITE_SCANSTAT_COMPLEX)).toBe(40)
    expect(stmt.scanStatusV2(0, Database.SQLITE_SCANSTAT_EXPLAIN, 1)).toMatch(/SEARCH t USING INDEX ta/)
    expect(typeof stmt.scanStatusV2(0, Database.SQLITE_SCANSTAT_EST, 1)).toBe('number')
    expect(stmt.scanStatusV2(99, Database.SQLITE_SCANSTAT_NVISIT, 1)).toBeUndefined()
    stmt.scanStatusReset()
    db.close()
  })
})

describe('wal2 and BEGIN CONCURRENT between connections of one instance', () => {
  it('keeps a reader’s snapshot while a writer commits, as zero-cache’s snapshotter needs', () => {
    const writer = new Database('/replica.db')
    expect(writer.pragma('journal_mode = wal2', { simple: true })).toBe('wal2')
    writer.exec('create table t (id integer primary key, v text); insert into t values (1, \'a\')')
    const reader = new Database('/replica.db')
    expect(reader.pragma('journal_mode', { simple: true })).toBe('wal2')
    reader.exec('BEGIN CONCURRENT')
    const count = reader.prepare('select count(*) from t').pluck()
    expect(count.get()).toBe(1)
    writer.prepare('insert into t values (2, \'b\')').run()
    writer.transaction(() => writer.prepare('update t set v = \'z\' where id = 1').run())()
    expect(count.get()).toBe(1)
    expect(reader.prepare('select v from t where id = 1').pluck().get()).toBe('a')
    reader.exec('ROLLBACK')
    expect(count.get()).toBe(2)
    // A concurrent writer that touches other pages commits beside another.
    const other = new Database('/replica.db')
    other.exec('create table u (x)')
    reader.exec('BEGIN CONCURRENT')
    other.exec('BEGIN CONCURRENT')
    reader.prepare('insert into t values (3, \'c\')').run()
    other.prepare('insert into u values (1)').run()
    reader.exec('COMMIT')
    other.exec('COMMIT')
    expect(writer.prepare('select (select count(*) from t) + (select count(*) from u)').pluck().get()).toBe(4)
    // A plain write transaction still excludes another: BUSY at once, nothing waits.
    writer.exec('BEGIN IMMEDIATE')
    expect(() => other.exec('BEGIN IMMEDIATE')).toThrow(expect.objectContaining({ code: 'SQLITE_BUSY' }))
    writer.exec('COMMIT')
    for (const db of [reader, other, writer]) db.close()
  })

  it('checkpoints through both wal files and keeps every row', () => {
    const db = new Database('/churn.db')
    db.pragma('journal_mode = wal2')
    db.pragma('wal_autocheckpoint = 20')
    db.exec('create table t (id integer primary key, pad text)')
    const add = db.prepare('insert into t (pad) values (?)')
    for (let i = 0; i < 2000; i++) add.run('x'.repeat(500))
    expect(db.prepare('select count(*) from t').pluck().get()).toBe(2000)
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok')
    expect(sqlite.files.names()).toEqual(expect.arrayContaining(['/churn.db', '/churn.db-wal', '/churn.db-wal2']))
    db.close()
  })
})

describe('files taken between calls reload crash-consistent', () => {
  it('reloads committed rows and none of an open transaction’s, whole or mid-spill', async () => {
    const files = new MemoryFiles()
    const store = new Store()
    await reopen(files)
    const db = new Database('/r.db')
    db.pragma('journal_mode = wal2')
    db.pragma('cache_size = 10') // a small cache spills an open transaction's pages into the wal
    db.exec('create table t (id integer primary key, pad text)')
    const add = db.prepare('insert into t (pad) values (?)')
    db.transaction(() => {
      for (let i = 0; i < 300; i++) add.run('c'.repeat(300))
    })()
    store.apply(files.takeChanges())
    db.exec('BEGIN')
    for (let i = 0; i < 500; i++) add.run('u'.repeat(300))
    const spilled = files.takeChanges()
    expect(spilled.chunks.length).toBeGreaterThan(0)
    store.apply(spilled)
    // The tab dies here: the open transaction never commits.
    await reopen(store.load())
    const again = new Database('/r.db')
    expect(again.prepare('select count(*) from t').pluck().get()).toBe(300)
    expect(again.prepare("select count(*) from t where pad like 'u%'").pluck().get()).toBe(0)
    expect(again.pragma('integrity_check', { simple: true })).toBe('ok')
    again.close()
    useSqlite(sqlite)
  })

  it('drops chunks past a truncation, so a file that grows again shows none of its old bytes', () => {
    const files = new MemoryFiles()
    const store = new Store()
    const id = files.open('/f', 4)
    files.write(id, new Uint8Array(3 * CHUNK).fill(7), 0)
    store.apply(files.takeChanges())
    files.truncate(id, 10)
    files.truncate(id, 3 * CHUNK)
    store.apply(files.takeChanges())
    const loaded = store.load()
    const back = new Uint8Array(3 * CHUNK)
    expect(loaded.read(loaded.open('/f', 0), back, 0)).toBe(3 * CHUNK)
    expect(back.subarray(0, 10).every((b) => b === 7)).toBe(true)
    expect(back.subarray(10).every((b) => b === 0)).toBe(true)
    files.delete('/f')
    files.open('/f', 4)
    store.apply(files.takeChanges())
    expect(store.load().size('/f')).toBe(0)
  })
})
