// Group commit and the durability gate, with a flush the test controls
// (in the browser it writes to IndexedDB; here it is a promise we resolve).

import { PGlite } from '@electric-sql/pglite'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { installChangeTracking } from '../../src/engine/install'
import { handleReplicationQuery, handleStartReplication } from '../../src/wire/walsender'
import { type ReplicationSession } from '../../src/engine/replication/session'
import { positionLsn } from '../../src/engine/replication/positions'
import { GroupCommit } from '../../src/worker/storage/group-commit'
import { run } from '../../src/engine/replication/exclusive'
import { recordStream } from '../support/stream'
import { pgTimestampFromDate } from '../../src/protocol/pgoutput'

/**
 * A flush whose write to storage waits until the test releases it; flushes are
 * numbered 1, 2, ... in start order. Its "copy" is the ids of table t, read
 * under the lock the flush holds while copying.
 */
function controlledFlush(db: PGlite) {
  const pending: { index: number; resolve: () => void }[] = []
  const completed: number[] = []
  let started = 0
  let onStart: (() => void) | null = null
  return {
    /** Ids of table t in each flush's snapshot (read under the lock the flush holds). */
    covered: new Map<number, Set<number>>(),
    async flush() {
      const index = ++started
      const r = await run(db, 'SELECT id FROM t', false)
      this.covered.set(index, new Set(r.sets[0].map(([id]) => Number(id))))
      const durable = new Promise<void>((resolve) => pending.push({ index, resolve }))
      onStart?.()
      return { durable }
    },
    get started() {
      return started
    },
    completed,
    /** Resolves once a flush is waiting to be released. */
    nextStart(): Promise<void> {
      if (pending.length) return Promise.resolve()
      return new Promise((resolve) => (onStart = () => ((onStart = null), resolve())))
    },
    releaseOne() {
      const p = pending.shift()!
      completed.push(p.index)
      p.resolve()
    },
  }
}

/** Group commit over a controlled flush. */
function gatedCommit(db: PGlite) {
  const f = controlledFlush(db)
  return { f, gc: new GroupCommit(db, () => f.flush()) }
}

describe('group commit', () => {
  let db: PGlite
  beforeEach(async () => {
    db = new PGlite()
    await installChangeTracking(db)
    await db.exec('CREATE TABLE t (id int PRIMARY KEY)')
  })
  afterEach(() => db.close())

  it('concurrent writes share flushes, and each resolves only after a flush that began after its commit', async () => {
    const { f, gc } = gatedCommit(db)
    const WRITERS = 20
    let finished = 0
    const violations: number[] = []
    const writers = Array.from({ length: WRITERS }, async (_, i) => {
      await db.query('INSERT INTO t VALUES ($1)', [i])
      await gc.durable()
      // A completed flush's snapshot holds this write.
      if (!f.completed.some((k) => f.covered.get(k)!.has(i))) violations.push(i)
      finished++
    })
    const all = Promise.all(writers)
    while (finished < WRITERS) {
      const next = await Promise.race([f.nextStart().then(() => 'flush' as const), all.then(() => 'done' as const)])
      if (next === 'flush') f.releaseOne()
    }
    await all
    expect(violations).toEqual([])
    // Grouped: far fewer flushes than writes (one per write would be 20).
    expect(f.started).toBeLessThanOrEqual(WRITERS / 2)
    expect(gc.flushes).toBe(f.started)
  })

  it('statements run while a flush writes its copy; they are durable only after the next flush', async () => {
    const { f, gc } = gatedCommit(db)
    await db.query('INSERT INTO t VALUES (1)')
    const first = gc.durable()
    await f.nextStart()
    // Flush 1 took its copy and is writing it: PGlite is free again.
    await db.query('INSERT INTO t VALUES (2)')
    expect(f.completed).toEqual([])
    let secondDone = false
    const second = gc.durable().then(() => (secondDone = true))
    f.releaseOne()
    await first
    expect(f.covered.get(1)).toEqual(new Set([1]))
    expect(secondDone).toBe(false)
    await f.nextStart()
    expect(f.covered.get(2)).toEqual(new Set([1, 2]))
    f.releaseOne()
    await second
    expect(gc.flushes).toBe(2)
  })

  it('skips the flush when nothing was written since the last one', async () => {
    const { f, gc } = gatedCommit(db)
    await db.query('INSERT INTO t VALUES (1)')
    const d = gc.durable()
    await f.nextStart()
    f.releaseOne()
    await d
    await db.query('SELECT * FROM t')
    await gc.durable()
    expect(f.started).toBe(1)
  })

  it('a stream carries a commit only after a flush made it durable', async () => {
    const { f, gc } = gatedCommit(db)
    await db.exec('CREATE PUBLICATION p FOR ALL TABLES')
    await handleReplicationQuery('CREATE_REPLICATION_SLOT gated LOGICAL pgoutput', db)
    const rec = recordStream()
    let session!: ReplicationSession
    const done = handleStartReplication(
      `START_REPLICATION SLOT gated LOGICAL 0/0 (proto_version '1', publication_names 'p')`,
      rec.writer,
      db,
      { durability: gc, keepaliveMs: 100, onSession: (s) => (session = s) },
    )
    await rec.waitFor((f) => f.tag === 'k')
    await db.query('INSERT INTO t VALUES (42)')
    // Committed, not yet flushed. The commit's signal woke the session, which
    // read the transaction and holds its frames; it still asks a silent
    // consumer for replies (the asks come from the same loop, after that read).
    const before = rec.frames.length
    const asks = () => rec.frames.slice(before).filter((fr) => fr.tag === 'k' && fr.replyRequested).length
    await rec.waitFor(() => asks() >= 2)
    const [{ p }] = (await db.query<{ p: string }>('SELECT _tabgres.position()::text AS p')).rows
    expect(rec.frames.some((fr) => fr.tag === 'w')).toBe(false)
    expect(session.heldFrames).toBeGreaterThan(0)
    for (const fr of rec.frames) if (fr.tag === 'k') expect(fr.walEnd < positionLsn(BigInt(p))).toBe(true)
    const flushing = gc.durable()
    await f.nextStart()
    const releasedAfter = pgTimestampFromDate(Date.now())
    f.releaseOne()
    await flushing
    // The flush released what was read ahead: Begin, Relation, Insert, Commit in order.
    await rec.waitFor((fr) => fr.tag === 'w' && fr.data[0] === 0x43)
    expect(session.heldFrames).toBe(0)
    const tags = rec.frames.filter((fr) => fr.tag === 'w').map((fr) => String.fromCharCode(fr.data[0]))
    expect(tags).toEqual(['B', 'R', 'I', 'C'])
    // Their clock is when they went out, not when they were read and encoded.
    for (const fr of rec.frames) if (fr.tag === 'w') expect(fr.clock >= releasedAfter).toBe(true)
    session.stop()
    await done
  })
})
