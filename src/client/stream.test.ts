// ReplicationStream re-attached to another worker (protocol/stream-port.ts:
// 'detached', 'resume', 'attach'), against scripted ends: where it asks to
// resume, and that the part of a transaction received before the switch is
// not handed to the consumer twice.

import { describe, expect, it } from 'vitest'
import { copyData } from '../protocol/backend'
import { encodeFrame } from '../protocol/replication-frames'
import { encodePgoutput } from '../protocol/pgoutput-encode'
import type { PgoutputMessage } from '../protocol/pgoutput'
import type { PageToWorker, WorkerToPage } from '../protocol/stream-port'
import { ReplicationStream } from './stream'

const begin = (finalLsn: bigint): PgoutputMessage => ({ tag: 'B', finalLsn, commitTime: 0n, xid: 7 })
const commit = (commitLsn: bigint, endLsn: bigint): PgoutputMessage => ({ tag: 'C', flags: 0, commitLsn, endLsn, commitTime: 0n })
const relation: PgoutputMessage = { tag: 'R', relationOid: 16384, namespace: 'public', relation: 't', replicaIdentity: 'd', columns: [{ flags: 1, name: 'id', typeOid: 23, typeMod: -1 }] }
const insert = (id: number): PgoutputMessage => ({ tag: 'I', relationOid: 16384, new: { kind: 'N', columns: [{ kind: 't', value: String(id) }] } })

/** The messages as a worker posts a burst: CopyData messages back to back in one transferred buffer. */
function frames(port: MessagePort, messages: PgoutputMessage[]): void {
  const parts = messages.map((m) => copyData(encodeFrame({ tag: 'w', walStart: 0n, walEnd: 0n, clock: 0n, data: encodePgoutput(m) })))
  const bytes = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0))
  parts.reduce((at, p) => (bytes.set(p, at), at + p.byteLength), 0)
  port.postMessage({ type: 'frames', buffer: bytes.buffer } satisfies WorkerToPage, [bytes.buffer])
}

/** The next message `port` receives. */
const next = <T>(port: MessagePort) => new Promise<T>((resolve) => (port.onmessage = (ev) => resolve(ev.data)))

/** What a Database does: attach a fresh frames port over the control port; returns the worker's end of it. */
function attach(control: MessagePort): MessagePort {
  const { port1, port2 } = new MessageChannel()
  control.postMessage({ type: 'attach', port: port2 } satisfies WorkerToPage, [port2])
  return port1
}

describe('a re-attached stream', () => {
  it('resumes after the last whole transaction and drops the re-sent part of the next', async () => {
    const { port1: consumerEnd, port2: control } = new MessageChannel()
    const stream = new ReplicationStream(consumerEnd)
    const seen: string[] = []
    let sawThree!: () => void
    const three = new Promise<void>((r) => (sawThree = r))
    const done = (async () => {
      for await (const m of stream.messages()) {
        if (m.kind !== 'xlog') continue
        const t = m.message
        seen.push(t.tag === 'I' && t.new.columns[0].kind === 't' ? `I${t.new.columns[0].value}` : t.tag)
        if (seen.at(-1) === 'I3') sawThree()
        if (t.tag === 'C' && t.endLsn === 0x300n) return
      }
    })()
    const first = attach(control)
    frames(first, [begin(0x100n), relation, insert(1), commit(0x100n, 0x108n), begin(0x200n), insert(2), insert(3)])
    await three
    // The worker went: the stream says where to resume.
    const resume = next<PageToWorker>(control)
    control.postMessage({ type: 'detached' } satisfies WorkerToPage)
    expect(await resume).toEqual({ type: 'resume', lsn: '0/108' })
    // The next worker sends that transaction whole, its Relation first (a new stream's).
    const second = attach(control)
    frames(second, [begin(0x200n), relation, insert(2), insert(3), insert(4), commit(0x200n, 0x208n), begin(0x300n), insert(5), commit(0x300n, 0x300n)])
    await done
    expect(seen).toEqual(['B', 'R', 'I1', 'C', 'B', 'I2', 'I3', 'R', 'I4', 'C', 'B', 'I5', 'C'])
    // Acknowledgements go to the attached worker.
    const ack = next<PageToWorker>(second)
    stream.ack(0x300n)
    expect(await ack).toMatchObject({ type: 'copy-data' })
    first.close()
    second.close()
    control.close()
  })

  it('tells the Database it ended, so that it is not re-attached', async () => {
    const { port1: consumerEnd, port2: control } = new MessageChannel()
    const stream = new ReplicationStream(consumerEnd)
    const worker = attach(control)
    const ended = next<PageToWorker>(control)
    worker.postMessage({ type: 'end' } satisfies WorkerToPage)
    await stream.closed
    expect(await ended).toEqual({ type: 'ended' })
    worker.close()
    control.close()
  })

  it('ends with 08P01 when a frames buffer does not hold whole CopyData messages', async () => {
    const { port1: consumerEnd, port2: worker } = new MessageChannel()
    const stream = new ReplicationStream(consumerEnd)
    const seen: string[] = []
    const done = (async () => {
      for await (const m of stream.messages()) if (m.kind === 'xlog') seen.push(m.message.tag)
    })()
    frames(worker, [begin(0x100n), relation])
    // A CopyData message whose length runs past the buffer's end.
    const cut = copyData(encodeFrame({ tag: 'w', walStart: 0n, walEnd: 0n, clock: 0n, data: encodePgoutput(insert(1)) })).slice(0, 12)
    worker.postMessage({ type: 'frames', buffer: cut.buffer } satisfies WorkerToPage, [cut.buffer])
    await expect(done).rejects.toMatchObject({ code: '08P01', message: expect.stringContaining('malformed replication frames') })
    expect(seen).toEqual(['B', 'R'])
    worker.close()
  })
})
