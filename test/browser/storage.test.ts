// The group-commit file system (src/worker/storage/idb-fs.ts) writes only the
// paths it saw change. If a change ever bypassed its tracking, IndexedDB would
// silently miss it; so after each step of a workload that creates, grows,
// truncates, rewrites, renames and removes files, IndexedDB must hold exactly
// the in-memory cluster: the same paths, bytes, links and modes. A database
// layered on the template stores only its differences: there, IndexedDB must
// hold exactly what turns the template into the cluster in memory. Runs
// PGlite on this page (no worker) to read both sides.

import { PGlite } from '@electric-sql/pglite'
import { expect, it } from 'vitest'
import { ENGINE_START_PARAMS } from '../../src/engine/start-params'
import { readImage, type DataDirImage } from '../../src/engine/template-image'
import { joinChunks, parseChunk } from '../../src/worker/storage/chunks'
import { GroupCommitIdbFs } from '../../src/worker/storage/idb-fs'
import { BASE_KEY } from '../../src/worker/storage/idb-load'

interface EmFS {
  readdir(p: string): string[]
  lstat(p: string): { mode: number }
  isDir(m: number): boolean
  isLink(m: number): boolean
  readlink(p: string): string
  readFile(p: string): Uint8Array
}
type Module = { FS: EmFS; IDBFS: { dbs: Record<string, IDBDatabase> } }
type FsRecord = { mode: number; contents?: Uint8Array; link?: string; deleted?: true; templateKey?: string }

function localTree(FS: EmFS, root: string): Map<string, FsRecord> {
  const out = new Map<string, FsRecord>()
  const walk = (dir: string) => {
    for (const name of FS.readdir(dir)) {
      if (name === '.' || name === '..') continue
      const p = `${dir}/${name}`
      const { mode } = FS.lstat(p)
      if (FS.isDir(mode)) {
        out.set(p, { mode })
        walk(p)
      } else if (FS.isLink(mode)) out.set(p, { mode, link: FS.readlink(p) })
      else out.set(p, { mode, contents: FS.readFile(p) })
    }
  }
  walk(root)
  return out
}

/** The cluster IndexedDB holds: for a layered database, the template's files with the stored records on top. */
async function storedTree(db: IDBDatabase, mount: string, base?: DataDirImage): Promise<Map<string, FsRecord>> {
  const records = await storedRecords(db)
  const keys = records.map(([k]) => k)
  const values = records.map(([, v]) => v)
  const out = new Map<string, FsRecord>()
  const baseAt = keys.indexOf(BASE_KEY)
  expect(baseAt >= 0, 'a layered database names its template').toBe(base !== undefined)
  for (const e of base?.entries ?? []) {
    const path = `${mount}/${e.path}`
    out.set(path, e.data ? { mode: 0o100000 | e.mode, contents: e.data } : { mode: 0o040000 | e.mode })
  }
  const removed: string[] = []
  // WAL segments are stored in chunks: join them to compare with the files.
  const chunked = new Map<string, { rec: FsRecord; chunks: Map<number, Uint8Array> }>()
  keys.forEach((k, i) => {
    const rec = values[i] as FsRecord
    if (k === BASE_KEY) return
    const chunk = parseChunk(k as string)
    if (rec.deleted) {
      expect(base, `a tombstone only in a layered database: ${k}`).toBeDefined()
      return void removed.push(k as string)
    }
    if (!chunk) return out.set(k as string, rec)
    const c = chunked.get(chunk.path) ?? { rec, chunks: new Map() }
    c.chunks.set(chunk.index, rec.contents!)
    chunked.set(chunk.path, c)
  })
  for (const [path, { rec, chunks }] of chunked) out.set(path, { ...rec, contents: joinChunks(path, chunks) })
  for (const gone of removed) for (const p of [...out.keys()]) if (p === gone || p.startsWith(`${gone}/`)) out.delete(p)
  return out
}

/** Differences between the cluster in memory and in IndexedDB (empty when equal). */
async function differences(db: PGlite, base?: DataDirImage): Promise<string[]> {
  const mod = (db as unknown as { Module: Module }).Module
  const [mount] = Object.keys(mod.IDBFS.dbs)
  const local = localTree(mod.FS, mount)
  const stored = await storedTree(mod.IDBFS.dbs[mount], mount, base)
  const diffs: string[] = []
  for (const [p, l] of local) {
    const s = stored.get(p)
    if (!s) diffs.push(`missing in IndexedDB: ${p}`)
    else if (s.mode !== l.mode) diffs.push(`mode differs: ${p}`)
    else if (l.link !== undefined && s.link !== l.link) diffs.push(`link differs: ${p}`)
    else if (l.contents && (!s.contents || s.contents.length !== l.contents.length || s.contents.some((b, i) => b !== l.contents![i])))
      diffs.push(`contents differ: ${p} (${s.contents?.length} stored, ${l.contents.length} in memory)`)
  }
  for (const p of stored.keys()) if (p !== mount && !local.has(p)) diffs.push(`stale in IndexedDB: ${p}`)
  return diffs
}

it('after every flush IndexedDB holds exactly the cluster in memory, and a small commit writes little', async () => {
  const name = `fs-check-${Date.now().toString(36)}`
  let fs = new GroupCommitIdbFs(name)
  let db = await PGlite.create({ fs, initDbStartParams: ['--wal-segsize=1'] })
  const step = async (sql: string) => {
    await db.exec(sql)
    await fs.flush()
    expect(await differences(db), sql).toEqual([])
  }
  await step('SELECT 1') // initdb's cluster
  await step(`CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(1, 8000) g`) // several WAL segments
  await step(`UPDATE t SET v = 'y' WHERE id % 3 = 0; DELETE FROM t WHERE id % 5 = 0`)
  await step('VACUUM FULL t') // a new relfilenode; the old files unlinked
  await step('CREATE INDEX t_v ON t (v); CHECKPOINT') // a checkpoint recycles (renames) WAL segments
  await step('TRUNCATE t; CREATE TABLE u AS SELECT * FROM generate_series(1, 1000) g')
  await step('DROP TABLE t; DROP TABLE u; CHECKPOINT')

  // One small commit writes a few chunks of the WAL segment and a few pages, not the cluster.
  await db.exec('CREATE TABLE small (id int)')
  await fs.flush()
  const before = fs.flushStats.bytes
  await db.exec('INSERT INTO small VALUES (1)')
  await fs.flush()
  expect(fs.flushStats.bytes - before).toBeLessThan(256 * 1024)
  await db.exec('INSERT INTO small VALUES (2)')
  await db.close()

  // Reopened from IndexedDB alone.
  fs = new GroupCommitIdbFs(name)
  db = await PGlite.create({ fs })
  expect((await db.query('SELECT count(*)::int AS n FROM small')).rows).toEqual([{ n: 2 }])
  await fs.flush() // start-up wrote pg_control, postmaster.pid, the relcache init files
  expect(await differences(db)).toEqual([])
  await db.close()
})

it('a database stored by plain IDBFS (whole WAL files) opens, and its segments move to chunks at the next flush', async () => {
  const name = `fs-legacy-${Date.now().toString(36)}`
  const plain = await PGlite.create(`idb://${name}`)
  await plain.exec(`CREATE TABLE t (v text); INSERT INTO t VALUES ('stored whole')`)
  await plain.close()

  let fs = new GroupCommitIdbFs(name)
  let db = await PGlite.create({ fs })
  await db.exec(`INSERT INTO t VALUES ('stored in chunks')`)
  await fs.flush()
  expect(await differences(db)).toEqual([])
  const mod = (db as unknown as { Module: Module }).Module
  const [mount] = Object.keys(mod.IDBFS.dbs)
  const keys = [...(await storedKeys(mod.IDBFS.dbs[mount]))].filter((k) => k.includes('/pg_wal/0'))
  expect(keys.length).toBeGreaterThan(0)
  expect(keys.every((k) => parseChunk(k) !== null)).toBe(true) // no whole segment left
  await db.close()

  fs = new GroupCommitIdbFs(name)
  db = await PGlite.create({ fs })
  expect((await db.query<{ v: string }>('SELECT v FROM t ORDER BY v')).rows.map((r) => r.v)).toEqual(['stored in chunks', 'stored whole'])
  await db.close()
})

it('a database layered on the template stores only its differences, and reopens equal', async () => {
  const res = await fetch(new URL('../../src/worker/storage/template.tar.gz', import.meta.url))
  expect(res.ok).toBe(true)
  const image = await readImage(new Uint8Array(await res.arrayBuffer()))
  const key = `template-under-test`
  const resolveBase = async (k: string) => {
    expect(k).toBe(key)
    return image
  }
  const name = `fs-layered-${Date.now().toString(36)}`
  let fs = new GroupCommitIdbFs(name, { base: { key, image }, resolveBase })
  let db = await PGlite.create({ fs, startParams: [...ENGINE_START_PARAMS] })
  expect(fs.loaded).toEqual({ created: true, baseKey: key })
  await fs.flush()
  // The first flush: the template's key and what start-up wrote, not the template's files.
  expect(fs.flushStats.bytes).toBeLessThan(image.bytes / 10)
  console.log(`layered first flush: ${fs.flushStats.records} records, ${fs.flushStats.bytes} bytes (template: ${image.bytes} bytes)`)
  expect(await differences(db, image)).toEqual([])
  const step = async (sql: string) => {
    await db.exec(sql)
    await fs.flush()
    expect(await differences(db, image), sql).toEqual([])
  }
  await step(`CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(1, 8000) g`)
  await step('VACUUM FULL pg_description') // a template relation gets a new file: the template's file is deleted
  await step('CHECKPOINT') // template WAL segments recycled (renamed) or removed
  await step(`DELETE FROM t WHERE id % 2 = 0`)
  await step('VACUUM FULL t')
  await step('CHECKPOINT')
  // The template's deleted files (pg_description's old file, recycled WAL segments) are tombstones.
  const mount = Object.keys((db as unknown as { Module: Module }).Module.IDBFS.dbs)[0]
  const tombstones = await storedRecords((db as unknown as { Module: Module }).Module.IDBFS.dbs[mount])
  expect(tombstones.filter(([, r]) => r.deleted).length).toBeGreaterThan(0)
  await db.close()

  // Reopened: the template's files, then the records, then the tombstones.
  fs = new GroupCommitIdbFs(name, { resolveBase })
  db = await PGlite.create({ fs, startParams: [...ENGINE_START_PARAMS] })
  expect(fs.loaded).toEqual({ created: false, baseKey: key })
  expect((await db.query('SELECT count(*)::int AS n FROM t')).rows).toEqual([{ n: 4000 }])
  await fs.flush()
  expect(await differences(db, image)).toEqual([])
  await db.close()

  // Without the template, a layered database does not open (never as an empty cluster).
  fs = new GroupCommitIdbFs(name)
  await expect(PGlite.create({ fs, startParams: [...ENGINE_START_PARAMS] })).rejects.toThrow(/layered on template template-under-test/)
})

async function storedRecords(db: IDBDatabase): Promise<[string, FsRecord][]> {
  const store = db.transaction(['FILE_DATA'], 'readonly').objectStore('FILE_DATA')
  const req = <T>(r: IDBRequest<T>) => new Promise<T>((res, rej) => ((r.onsuccess = () => res(r.result)), (r.onerror = () => rej(r.error))))
  const [keys, values] = await Promise.all([req(store.getAllKeys()), req(store.getAll())])
  return keys.map((k, i) => [k as string, values[i] as FsRecord])
}

async function storedKeys(db: IDBDatabase): Promise<string[]> {
  return (await storedRecords(db)).map(([k]) => k)
}
