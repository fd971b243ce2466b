// The browser runtime in Chromium: a real module worker per database, PGlite
// on IndexedDB, Comlink, and replication frames over a MessagePort.
// Every wait is on a promise, a frame or a message, never a timer.
// What needs no persistence runs on the testing kit's fresh databases (the
// same API on a port of the kit's worker); the rest opens idb:// databases.

import { afterAll, describe, expect, it } from 'vitest'
import { openDatabase, PgError, type PgoutputMessage, type ReplicationStream } from '../../src/client'
import { formatLsn } from '../../src/protocol/lsn'
import { createTestKit } from '../../src/testing/browser'

const kit = createTestKit()
afterAll(() => kit.close())

let counter = 0
const unique = (prefix: string) => `${prefix}_${Date.now().toString(36)}_${++counter}`

/** The records IDBFS's store of `dbName` holds, and their file bytes. */
async function storedBytes(dbName: string): Promise<{ keys: string[]; bytes: number }> {
  const req = <T>(r: IDBRequest<T>) => new Promise<T>((res, rej) => ((r.onsuccess = () => res(r.result)), (r.onerror = () => rej(r.error))))
  const idb = await req(indexedDB.open(dbName))
  try {
    const store = idb.transaction(['FILE_DATA'], 'readonly').objectStore('FILE_DATA')
    const [keys, values] = await Promise.all([req(store.getAllKeys()), req(store.getAll())])
    const bytes = (values as { contents?: Uint8Array }[]).reduce((n, v) => n + (v.contents?.byteLength ?? 0), 0)
    return { keys: keys as string[], bytes }
  } finally {
    idb.close()
  }
}

/** Collect decoded pgoutput messages until `until` says stop. */
async function collect(stream: ReplicationStream, until: (msgs: PgoutputMessage[]) => boolean): Promise<PgoutputMessage[]> {
  const out: PgoutputMessage[] = []
  for await (const m of stream.messages()) {
    if (m.kind !== 'xlog') continue
    out.push(m.message)
    if (until(out)) break
  }
  return out
}

/**
 * Runs a module script in a new same-origin document (an iframe) and resolves
 * with what it posts. Removing the iframe ends the document and its workers,
 * as closing or reloading a tab does.
 */
function inFrame(script: string): Promise<{ result: unknown; remove: () => void }> {
  const frame = document.createElement('iframe')
  const id = unique('frame')
  frame.srcdoc = `<script type="module">
    import { openDatabase } from '/src/client/index.ts'
    const post = (result) => parent.postMessage({ id: ${JSON.stringify(id)}, result }, '*')
    try { ${script} } catch (e) { post({ error: String(e && e.message || e), code: e && e.code }) }
  </script>`
  return new Promise((resolve) => {
    const onMessage = (ev: MessageEvent) => {
      if (ev.data?.id !== id) return
      window.removeEventListener('message', onMessage)
      resolve({ result: ev.data.result, remove: () => frame.remove() })
    }
    window.addEventListener('message', onMessage)
    document.body.appendChild(frame)
  })
}

describe('persistence', () => {
  it('a write acknowledged before terminate() survives it', async () => {
    const name = unique('terminate')
    const db = await openDatabase(name)
    await db.exec('CREATE TABLE t (id int PRIMARY KEY, v text)')
    const before = (await db.stats()).flushes
    await Promise.all(Array.from({ length: 50 }, (_, i) => db.query('INSERT INTO t VALUES ($1, $2)', [i, `v${i}`])))
    // Group commit: 50 writes in flight together share a few flushes, not one each.
    expect((await db.stats()).flushes - before).toBeLessThan(10)
    await db.transaction(async (tx) => {
      await tx.query(`INSERT INTO t VALUES (1000, 'in a transaction')`)
      await tx.query(`UPDATE t SET v = 'updated' WHERE id = 0`)
    })
    db.terminate() // no close(): the worker just dies
    const again = await openDatabase(name)
    const r = await again.query<{ n: number; v: string }>(`SELECT count(*)::int AS n, (SELECT v FROM t WHERE id = 0) AS v FROM t`)
    expect(r.rows).toEqual([{ n: 51, v: 'updated' }])
    await again.close()
  })

  it('close() right after a write finishes (a prune due after the commit used to query the closing PGlite, which never returned)', async () => {
    for (let i = 0; i < 2; i++) {
      const name = unique('close')
      const db = await openDatabase(name)
      await db.exec('CREATE TABLE t (v text)')
      await db.query(`INSERT INTO t VALUES ('a')`)
      await db.close()
      const again = await openDatabase(name)
      expect((await again.query('SELECT v FROM t')).rows).toEqual([{ v: 'a' }])
      await again.close()
    }
  })

  it('a new database boots from the template: phases told in order, then only its differences stored', async () => {
    const name = unique('boot')
    const told: string[] = []
    let heardReady!: () => void
    const ready = new Promise<void>((r) => (heardReady = r))
    const db = await openDatabase(name, {
      onProgress: (p) => {
        told.push(p.phase)
        if (p.phase === 'ready') heardReady()
      },
    })
    await ready // progress comes on its own port: not ordered with open's answer
    expect(told).toEqual(['lock', 'registry', 'pglite', 'install', 'ready'])
    expect(db.boot).toMatchObject({ created: true, fromTemplate: true })
    for (const part of ['pglite: wasm', 'pglite: template wait', 'pglite: load', 'pglite: start', 'install']) expect(db.boot.phases[part]).toBeGreaterThanOrEqual(0)
    await db.query('CREATE TABLE t (id int)')
    await db.close()
    // IndexedDB holds the template's key and what this database changed: not the template's ~30 MB.
    const stored = await storedBytes(`/pglite/${name}`)
    expect(stored.keys).toContain('tabgres:base')
    expect(stored.bytes).toBeLessThan(4 * 1024 * 1024)
    const again = await openDatabase(name)
    expect(again.boot).toMatchObject({ created: false, fromTemplate: false })
    expect((await again.query('SELECT count(*)::int AS n FROM t')).rows).toEqual([{ n: 0 }])
    await again.close()
  })

  it('data persists across a page reload (the document and its worker go away)', async () => {
    const name = unique('reload')
    const first = await inFrame(`
      const db = await openDatabase(${JSON.stringify(name)})
      await db.exec("CREATE TABLE notes (id int PRIMARY KEY, body text)")
      await db.query("INSERT INTO notes VALUES (1, 'kept across reloads')")
      post({ boot: db.boot })`)
    expect((first.result as { boot: { created: boolean } }).boot.created).toBe(true)
    first.remove() // the page goes away without closing the database
    const second = await inFrame(`
      const db = await openDatabase(${JSON.stringify(name)}, { onLocked: 'wait' })
      const r = await db.query("SELECT body FROM notes")
      post({ rows: r.rows, boot: db.boot })
      await db.close()`)
    const r = second.result as { rows: unknown[]; boot: { created: boolean } }
    expect(r.rows).toEqual([{ body: 'kept across reloads' }])
    expect(r.boot.created).toBe(false)
    second.remove()
  })
})

describe('replication over a MessagePort', () => {
  it('frames arrive in order and decode; their buffers are detached on the sender side', async () => {
    const db = await kit.fresh()
    await db.exec(`CREATE TABLE items (id int PRIMARY KEY, name text, price numeric(10,2)); CREATE PUBLICATION p FOR ALL TABLES`)
    await db.createSlot('s1')
    const stream = await db.startReplication({ slot: 's1', options: { proto_version: '1', publication_names: 'p' } })
    for (let i = 1; i <= 20; i++) await db.query('INSERT INTO items VALUES ($1, $2, $3)', [i, `item ${i}`, '9.50'])
    await db.query(`UPDATE items SET price = 10 WHERE id <= 5`)
    const msgs = await collect(stream, (m) => m.filter((x) => x.tag === 'C').length === 21)
    const tags = msgs.map((m) => m.tag).join('')
    expect(tags).toBe('BRIC' + 'BIC'.repeat(19) + 'B' + 'U'.repeat(5) + 'C')
    const rel = msgs.find((m) => m.tag === 'R')
    expect(rel).toMatchObject({ relation: 'items', columns: [{ name: 'id', typeOid: 23, flags: 1 }, { name: 'name', typeOid: 25 }, { name: 'price', typeOid: 1700, typeMod: 655366 }] })
    const inserts = msgs.filter((m) => m.tag === 'I')
    expect(inserts.map((m) => (m.tag === 'I' && m.new.columns[0].kind === 't' ? m.new.columns[0].value : null))).toEqual(
      Array.from({ length: 20 }, (_, i) => String(i + 1)),
    )
    const commits = msgs.filter((m) => m.tag === 'C').map((m) => (m.tag === 'C' ? m.commitLsn : 0n))
    for (let i = 1; i < commits.length; i++) expect(commits[i] > commits[i - 1]).toBe(true)
    const stats = await db.stats()
    expect(stats.streams).toHaveLength(1)
    expect(stats.streams[0].frames).toBeGreaterThanOrEqual(msgs.length)
    // One buffer per post, holding many frames, each buffer transferred (detached here).
    expect(stats.streams[0].detached).toBe(stats.streams[0].messages)
    expect(stats.streams[0].messages).toBeLessThan(stats.streams[0].frames)
    await stream.close()
    await db.close()
  })

  it('acknowledged changes are not sent again after the worker restarts', async () => {
    const name = unique('ack')
    const db = await openDatabase(name)
    await db.exec(`CREATE TABLE t (id int PRIMARY KEY); CREATE PUBLICATION p FOR ALL TABLES`)
    await db.createSlot('acked')
    const stream = await db.startReplication({ slot: 'acked', options: { proto_version: '1', publication_names: 'p' } })
    for (let i = 1; i <= 10; i++) await db.query('INSERT INTO t VALUES ($1)', [i])
    let fifth = 0n
    let seen = 0
    for await (const m of stream.messages()) {
      if (m.kind === 'xlog' && m.message.tag === 'C' && ++seen === 5) {
        fifth = m.message.commitLsn
        break
      }
    }
    stream.ack(fifth)
    await stream.close() // CopyDone: the acknowledgement is persisted first
    db.terminate()
    const again = await openDatabase(name)
    const resumed = await again.startReplication({ slot: 'acked', options: { proto_version: '1', publication_names: 'p' } })
    const msgs = await collect(resumed, (m) => m.filter((x) => x.tag === 'C').length === 5)
    const ids = msgs.flatMap((m) => (m.tag === 'I' && m.new.columns[0].kind === 't' ? [m.new.columns[0].value] : []))
    expect(ids).toEqual(['6', '7', '8', '9', '10'])
    await resumed.close()
    await again.close()
  })

  it('an acknowledgement posted just before close() is durable when close() resolves', async () => {
    const name = unique('ack_close')
    const db = await openDatabase(name)
    await db.exec(`CREATE TABLE t (id int PRIMARY KEY); CREATE PUBLICATION p FOR ALL TABLES`)
    await db.createSlot('acked')
    const stream = await db.startReplication({ slot: 'acked', options: { proto_version: '1', publication_names: 'p' } })
    for (let i = 1; i <= 6; i++) await db.query('INSERT INTO t VALUES ($1)', [i])
    let last = 0n
    let seen = 0
    for await (const m of stream.messages()) {
      if (m.kind === 'xlog' && m.message.tag === 'C' && ++seen === 6) {
        last = m.message.commitLsn
        break
      }
    }
    // No CopyDone: the worker's close() asks the stream for a reply first, as
    // a walsender does at shutdown, and the stream answers with this position.
    stream.ack(last)
    await db.close()
    const again = await openDatabase(name)
    const slot = await again.query<{ c: string }>(`SELECT confirmed_flush_lsn::text AS c FROM pg_replication_slots`)
    expect(slot.rows).toEqual([{ c: formatLsn(last) }])
    await again.query('INSERT INTO t VALUES (7)')
    const resumed = await again.startReplication({ slot: 'acked', options: { proto_version: '1', publication_names: 'p' } })
    const msgs = await collect(resumed, (m) => m.some((x) => x.tag === 'C'))
    expect(msgs.flatMap((m) => (m.tag === 'I' && m.new.columns[0].kind === 't' ? [m.new.columns[0].value] : []))).toEqual(['7'])
    await resumed.close()
    await again.close()
  })

  it('a consumer that does not read holds the worker to its window', async () => {
    const db = await kit.fresh()
    await db.exec(`CREATE TABLE big (id int PRIMARY KEY, pad text); CREATE PUBLICATION p FOR ALL TABLES`)
    await db.createSlot('slow')
    const window = 64 * 1024
    const stream = await db.startReplication({ slot: 'slow', window, options: { proto_version: '1', publication_names: 'p' } })
    // About 2.5 MB of frames, 40 times the window.
    await db.query(`INSERT INTO big SELECT g, repeat('x', 200) FROM generate_series(1, 10000) g`)
    // Wait until the worker has filled the window and stopped sending.
    for (;;) {
      const s = (await db.stats()).streams[0]
      if (s.buffered >= window) break
      await new Promise((r) => requestAnimationFrame(r))
    }
    const held = (await db.stats()).streams[0]
    // Bounded by the window plus one read batch of frames (2,000 rows here).
    expect(held.maxBuffered).toBeLessThan(window + 2000 * 300)
    expect(held.bytes).toBeLessThan(window + 2000 * 300)
    // Reading drains it all, in order.
    const msgs = await collect(stream, (m) => m.some((x) => x.tag === 'C'))
    expect(msgs.filter((m) => m.tag === 'I')).toHaveLength(10000)
    await stream.close()
    await db.close()
  })
})

describe('errors and ownership', () => {
  it('SQLSTATE, detail, hint and position cross the port; the worker survives bad calls', async () => {
    const db = await kit.fresh()
    await db.exec('CREATE TABLE t (id int PRIMARY KEY)')
    await db.query('INSERT INTO t VALUES (1)')
    const dup = await db.query('INSERT INTO t VALUES (1)').catch((e) => e)
    expect(dup).toBeInstanceOf(PgError)
    expect(dup).toMatchObject({ code: '23505', detail: 'Key (id)=(1) already exists.', constraint: 't_pkey', table: 't' })
    const syntax = await db.query('SELEC 1').catch((e) => e)
    expect(syntax).toMatchObject({ code: '42601', position: '1' })
    const slot = await db.createSlot('Bad-Name').catch((e) => e)
    expect(slot).toMatchObject({ code: '42602', hint: expect.stringContaining('lower case letters') })
    const unknown = await db.startReplication({ slot: 'nope', options: { proto_version: '1', publication_names: 'p' } }).catch((e) => e)
    expect(unknown).toMatchObject({ code: '42704', message: 'replication slot "nope" does not exist' })
    const badLsn = await db.startReplication({ slot: 'x', startLsn: 'zz', options: {} }).catch((e) => e)
    expect(badLsn).toMatchObject({ code: '42601' })
    const inTx = await db
      .transaction(async (tx) => {
        await tx.query('INSERT INTO t VALUES (2)')
        await tx.query('INSERT INTO t VALUES (2)')
      })
      .catch((e) => e)
    expect(inTx).toMatchObject({ code: '23505' })
    // Still usable, and the failed transaction left nothing.
    expect((await db.query<{ n: number }>('SELECT count(*)::int AS n FROM t')).rows).toEqual([{ n: 1 }])
    await db.close()
  })

  it('an interactive transaction excludes every other call until it ends', async () => {
    const db = await kit.fresh()
    await db.exec('CREATE TABLE t (id int PRIMARY KEY)')
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    const order: string[] = []
    const tx = db.transaction(async (t) => {
      await t.query('INSERT INTO t VALUES (1)')
      order.push('tx insert')
      await gate
      order.push('tx commit')
    })
    // Issued while the transaction is open: must neither see its row nor run inside it.
    const outside = db.query<{ n: number }>('SELECT count(*)::int AS n FROM t').then((r) => {
      order.push('outside')
      return r.rows[0].n
    })
    while (order.length === 0) await new Promise((r) => requestAnimationFrame(r))
    release()
    await tx
    expect(await outside).toBe(1)
    expect(order).toEqual(['tx insert', 'tx commit', 'outside'])
    await db.close()
  })

  it('a second open of a held name shares it (the default), fails with 55006 with onLocked: fail, or waits for it with onLocked: wait', async () => {
    const name = unique('owned')
    const first = await openDatabase(name)
    await first.exec('CREATE TABLE t (v text)')
    await first.query(`INSERT INTO t VALUES ('first')`)
    const shared = await openDatabase(name)
    expect([first.leads, shared.leads]).toEqual([true, false])
    expect((await shared.query<{ v: string }>('SELECT v FROM t')).rows).toEqual([{ v: 'first' }])
    await shared.close()
    const refused = await openDatabase(name, { onLocked: 'fail' }).catch((e) => e)
    expect(refused).toBeInstanceOf(PgError)
    expect(refused).toMatchObject({ code: '55006', message: `database "${name}" is open in another tab or worker` })
    let opened = false
    const waiting = openDatabase(name, { onLocked: 'wait' }).then((db) => {
      opened = true
      return db
    })
    await first.query(`INSERT INTO t VALUES ('still first')`)
    expect(opened).toBe(false)
    await first.close()
    const second = await waiting
    expect((await second.query<{ v: string }>('SELECT v FROM t ORDER BY v')).rows).toEqual([{ v: 'first' }, { v: 'still first' }])
    await second.close()
  })
})

describe('wire protocol on a MessagePort', () => {
  const enc = new TextEncoder()
  /** A frontend message: tag, int32 length, body. */
  function msg(tag: string, body: Uint8Array): ArrayBuffer {
    const out = new Uint8Array(body.length + 5)
    out[0] = tag.charCodeAt(0)
    new DataView(out.buffer).setInt32(1, body.length + 4)
    out.set(body, 5)
    return out.buffer
  }
  const cstr = (s: string) => enc.encode(s + '\0')
  function startup(params: Record<string, string>): ArrayBuffer {
    const pairs = Object.entries(params).flatMap(([k, v]) => [...cstr(k), ...cstr(v)])
    const out = new Uint8Array(8 + pairs.length + 1)
    const dv = new DataView(out.buffer)
    dv.setInt32(0, out.length)
    dv.setInt32(4, 196608)
    out.set(pairs, 8)
    return out.buffer
  }

  it('a client in the page drives a replication session on the worker', async () => {
    const { decodeBackendMessages } = await import('../../src/protocol/backend-decode')
    const { decodeFrame, encodeFrame } = await import('../../src/protocol/replication-frames')
    const { decodePgoutput } = await import('../../src/client')
    const db = await kit.fresh()
    await db.exec(`CREATE TABLE t (id int PRIMARY KEY, v text); CREATE PUBLICATION p FOR ALL TABLES`)
    const port = await db.connect()
    const inbox: ReturnType<typeof decodeBackendMessages> = []
    let wake: () => void = () => {}
    port.onmessage = (ev) => {
      if (ev.data) inbox.push(...decodeBackendMessages(new Uint8Array(ev.data)))
      wake()
    }
    /** Wait for a message matching pred, consuming everything up to it. */
    const next = async (pred: (m: (typeof inbox)[number]) => boolean) => {
      for (;;) {
        const i = inbox.findIndex(pred)
        if (i >= 0) return inbox.splice(0, i + 1)
        await new Promise<void>((r) => (wake = r))
      }
    }
    const send = (b: ArrayBuffer) => port.postMessage(b, [b])
    send(startup({ user: 'postgres', database: 'postgres', replication: 'database' }))
    const hello = await next((m) => m.tag === 'Z')
    expect(hello[0]).toMatchObject({ tag: 'other', type: 'R' })
    expect(hello.some((m) => m.tag === 'other' && m.type === 'S')).toBe(true)

    send(msg('Q', cstr('IDENTIFY_SYSTEM')))
    const ident = await next((m) => m.tag === 'Z')
    expect(ident[0]).toMatchObject({ tag: 'T', fields: [{ name: 'systemid' }, { name: 'timeline' }, { name: 'xlogpos' }, { name: 'dbname' }] })

    send(msg('Q', cstr('CREATE_REPLICATION_SLOT wire_slot LOGICAL pgoutput')))
    await next((m) => m.tag === 'Z')
    send(msg('Q', cstr(`START_REPLICATION SLOT wire_slot LOGICAL 0/0 (proto_version '1', publication_names 'p')`)))
    await next((m) => m.tag === 'other' && m.type === 'W') // CopyBothResponse
    await db.query(`INSERT INTO t VALUES (1, 'over the wire')`)
    const frames = await next((m) => m.tag === 'other' && m.type === 'd' && m.body[0] === 0x77 && m.body[25] === 0x43)
    const pgoutput = frames.flatMap((m) => {
      if (m.tag !== 'other' || m.type !== 'd') return []
      const f = decodeFrame(m.body)
      return f.tag === 'w' ? [decodePgoutput(f.data)] : []
    })
    expect(pgoutput.map((m) => m.tag).join('')).toBe('BRIC')
    const commit = pgoutput[3]
    const lsn = commit.tag === 'C' ? commit.endLsn : 0n
    const status = encodeFrame({ tag: 'r', written: lsn, flushed: lsn, applied: lsn, clock: 0n, replyRequested: false })
    send(msg('d', status))
    send(msg('c', new Uint8Array(0))) // CopyDone
    const tail = await next((m) => m.tag === 'Z')
    expect(tail.map((m) => (m.tag === 'other' ? m.type : m.tag === 'C' ? `C:${m.commandTag}` : m.tag)).slice(-4)).toEqual([
      'c',
      'C:COPY 0',
      'C:START_REPLICATION',
      'Z',
    ])
    port.postMessage(null)
    const slot = await db.query<{ l: string }>(`SELECT confirmed_flush_lsn::text AS l FROM pg_replication_slots WHERE slot_name = 'wire_slot'`)
    expect(slot.rows[0].l).not.toBe('0/0')
    await db.close()
  })

  it('a session used by a worker that is terminated ends with it, when the worker held the Web Lock named at connect', async () => {
    const db = await kit.fresh()
    await db.exec(`CREATE TABLE t (id int PRIMARY KEY)`)
    // The worker takes the lock, then carries the port: it starts a transaction, inserts, and leaves it open.
    const source = `
      onmessage = async ({ data }) => {
        if (data.lock) {
          navigator.locks.request(data.lock, () => new Promise(() => postMessage('held')))
          return
        }
        const { port, frames } = data
        port.onmessage = ({ data }) => { if (data) postMessage(data, [data]) }
        for (const f of frames) port.postMessage(f, [f])
      }`
    const worker = new Worker(URL.createObjectURL(new Blob([source], { type: 'text/javascript' })))
    const holder = `runtime-test:${crypto.randomUUID()}`
    const next = () => new Promise<unknown>((r) => (worker.onmessage = (ev) => r(ev.data)))
    let reply = next()
    worker.postMessage({ lock: holder })
    expect(await reply).toBe('held')
    const port = await db.connect({ holder })
    const { decodeBackendMessages } = await import('../../src/protocol/backend-decode')
    const seen: string[] = []
    const inTransaction = new Promise<void>((resolve) => {
      worker.onmessage = (ev: MessageEvent<ArrayBuffer>) => {
        for (const m of decodeBackendMessages(new Uint8Array(ev.data))) {
          if (m.tag !== 'Z') continue
          seen.push(`Z:${m.status}`)
          if (seen.length === 2) resolve()
        }
      }
    })
    const frames = [startup({ user: 'postgres', database: 'postgres' }), msg('Q', cstr('BEGIN; INSERT INTO t VALUES (1)'))]
    worker.postMessage({ port, frames }, [port, ...frames])
    await inTransaction
    expect(seen).toEqual(['Z:I', 'Z:T'])
    // The worker dies with its transaction open. The lock is released, the session ends and rolls back:
    // the next statement runs instead of waiting for the shared backend (55P03 after 60 s).
    worker.terminate()
    expect((await db.query<{ n: number }>('SELECT count(*)::int AS n FROM t')).rows).toEqual([{ n: 0 }])
    await db.close()
  })
})
