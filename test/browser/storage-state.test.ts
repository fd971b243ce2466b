// What a page can tell its user about its data (db.storage(), in every
// engine): whether the browser will keep it and how much it uses; and that
// nothing tabgres stores in IndexedDB is a Blob, which WebKit refuses in a
// fresh profile (Safari's private mode too).

import { expect, it } from 'vitest'
import { openDatabase } from '../../src/client'
import { blobsInIndexedDB } from '../support/idb-blobs'

const run = Math.random().toString(36).slice(2, 8)

it('db.storage() says what the browser keeps: persisted as the browser says, the usage within the quota and growing with the data', async () => {
  const db = await openDatabase(`storage_state_${run}`)
  try {
    const before = await db.storage()
    // WebKitGTK 2.50 has no StorageManager (Safari has had one since 15.2): nothing is known, and db.storage() says so.
    if (!navigator.storage) return expect(before).toEqual({ persisted: false, usage: null, quota: null })
    expect(before.persisted).toBe(await navigator.storage.persisted())
    expect(before.usage).toEqual(expect.any(Number))
    expect(before.quota).toBeGreaterThan(before.usage!)
    // About 4 MB that no compression shrinks, durable in IndexedDB once the INSERT answers.
    await db.exec(`CREATE TABLE big (id int PRIMARY KEY, pad bytea)`)
    await db.query(`INSERT INTO big SELECT i, decode(string_agg(lpad(to_hex((random() * 2147483647)::int), 8, '0'), ''), 'hex') FROM generate_series(1, 512) i, generate_series(1, 2048) j GROUP BY i`)
    await db.exec('CHECKPOINT')
    const after = await db.storage()
    expect(after.usage! - before.usage!, `usage ${before.usage} → ${after.usage}`).toBeGreaterThan(1_000_000)
    expect(after.quota).toBeGreaterThan(after.usage!)
  } finally {
    await db.close()
  }
})

it('nothing in IndexedDB is a Blob: the template, the cluster, the registry', async () => {
  const db = await openDatabase(`no_blob_${run}`)
  await db.exec(`CREATE TABLE t (id int PRIMARY KEY, b bytea); INSERT INTO t VALUES (1, '\\x0102')`)
  await db.close()
  const found = await blobsInIndexedDB()
  expect(found.databases.length).toBeGreaterThan(0)
  expect(found.values).toBeGreaterThan(0)
  expect(found.blobs).toEqual([])
})
