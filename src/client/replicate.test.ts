// replicate() against a scripted worker end of the stream port: what it
// acknowledges, when, and what it does when apply fails.

import { afterEach, describe, expect, it } from 'vitest'
import { copyData } from '../protocol/backend'
import { decodeFrame, encodeFrame } from '../protocol/replication-frames'
import { encodePgoutput } from '../protocol/pgoutput-encode'
import type { PgoutputMessage } from '../protocol/pgoutput'
import type { PageToWorker, WorkerToPage } from '../protocol/stream-port'
import { ReplicationStream } from './stream'
import { replicate } from './replicate'

/** The worker's end: sends frames, records what the page sends back, in order. */
class WorkerEnd {
  readonly channel = new MessageChannel()
  readonly received: PageToWorker[] = []
  private waiters: (() => void)[] = []

  constructor() {
    this.channel.port1.onmessage = (ev: MessageEvent<PageToWorker>) => {
      this.received.push(ev.data)
      for (const w of this.waiters.splice(0)) w()
    }
  }

  /** Acknowledged positions (standby status updates' flush LSN), in order. */
  acks(): bigint[] {
    return this.received.flatMap((m) => {
      if (m.type !== 'copy-data') return []
      const f = decodeFrame(new Uint8Array(m.buffer))
      return f.tag === 'r' ? [f.flushed] : []
    })
  }

  /** Resolves once the page has sent something `test` accepts. */
  async until(test: () => boolean): Promise<void> {
    while (!test()) await new Promise<void>((r) => this.waiters.push(r))
  }

  private send(payload: Uint8Array): void {
    const buffer = copyData(payload).slice().buffer as ArrayBuffer
    const m: WorkerToPage = { type: 'frames', buffer }
    this.channel.port1.postMessage(m, [buffer])
  }

  xlog(at: bigint, message: PgoutputMessage): void {
    this.send(encodeFrame({ tag: 'w', walStart: at, walEnd: at, clock: 0n, data: encodePgoutput(message) }))
  }

  keepalive(walEnd: bigint, replyRequested = false): void {
    this.send(encodeFrame({ tag: 'k', walEnd, clock: 0n, replyRequested }))
  }

  end(): void {
    this.channel.port1.postMessage({ type: 'end' } satisfies WorkerToPage)
  }

  close(): void {
    this.channel.port1.close()
  }
}

const begin = (finalLsn: bigint): PgoutputMessage => ({ tag: 'B', finalLsn, commitTime: 0n, xid: 7 })
const commit = (commitLsn: bigint, endLsn: bigint): PgoutputMessage => ({ tag: 'C', flags: 0, commitLsn, endLsn, commitTime: 0n })
const message = (content: string): PgoutputMessage => ({ tag: 'M', flags: 1, lsn: 0x10n, prefix: 'p', content: new TextEncoder().encode(content) })

let worker: WorkerEnd
afterEach(() => worker.close())

describe('replicate', () => {
  it('acknowledges a commit only after apply resolved for it, and applies in order', async () => {
    worker = new WorkerEnd()
    const stream = new ReplicationStream(worker.channel.port2)
    const applied: string[] = []
    let releaseCommit!: () => void
    const commitApplied = new Promise<void>((r) => (releaseCommit = r))
    let commitReached!: () => void
    const reachedCommit = new Promise<void>((r) => (commitReached = r))
    const done = replicate(stream, async (m) => {
      applied.push(m.tag)
      if (m.tag === 'C') {
        commitReached()
        await commitApplied
      }
    })
    worker.xlog(0x10n, begin(0x20n))
    worker.xlog(0x10n, message('x'))
    worker.xlog(0x20n, commit(0x20n, 0x28n))
    await reachedCommit
    // apply is still working on the Commit: nothing may be acknowledged yet.
    worker.keepalive(0x28n, true) // the stream itself answers with the last acknowledged position: 0/0
    await worker.until(() => worker.acks().length === 1)
    expect(worker.acks()).toEqual([0n])
    releaseCommit()
    await worker.until(() => worker.acks().length === 3)
    // Then the commit's end, then the keepalive read after it (between transactions).
    expect(worker.acks()).toEqual([0n, 0x28n, 0x28n])
    expect(applied).toEqual(['B', 'M', 'C'])
    worker.end()
    await done
  })

  it('acknowledges keepalives between transactions, never inside one', async () => {
    worker = new WorkerEnd()
    const stream = new ReplicationStream(worker.channel.port2)
    const progress: bigint[] = []
    let inside!: () => void
    const insideSeen = new Promise<void>((r) => (inside = r))
    const done = replicate(stream, () => {}, {
      onApplied: (lsn) => progress.push(lsn),
      onKeepalive: (walEnd) => {
        if (walEnd === 0x18n) inside()
      },
    })
    worker.keepalive(0x08n)
    worker.xlog(0x10n, begin(0x20n))
    worker.keepalive(0x18n)
    await insideSeen
    worker.xlog(0x20n, commit(0x20n, 0x28n))
    worker.keepalive(0x30n)
    await worker.until(() => worker.acks().length === 3)
    worker.end()
    await done
    expect(worker.acks()).toEqual([0x08n, 0x28n, 0x30n])
    expect(progress).toEqual([0x08n, 0x28n, 0x30n])
  })

  it('when apply fails: ends the stream (CopyDone), acknowledges nothing of that transaction, rejects with the error', async () => {
    worker = new WorkerEnd()
    const stream = new ReplicationStream(worker.channel.port2)
    const done = replicate(stream, (m) => {
      if (m.tag === 'C' && m.endLsn === 0x48n) throw new Error('apply failed')
    })
    worker.xlog(0x10n, begin(0x20n))
    worker.xlog(0x20n, commit(0x20n, 0x28n))
    worker.xlog(0x30n, begin(0x40n))
    worker.xlog(0x40n, commit(0x40n, 0x48n))
    await worker.until(() => worker.received.some((m) => m.type === 'copy-done'))
    worker.end() // the worker answers CopyDone by ending the stream
    await expect(done).rejects.toThrow('apply failed')
    expect(worker.acks()).toEqual([0x28n])
  })

  it("rejects with the stream's own error", async () => {
    worker = new WorkerEnd()
    const stream = new ReplicationStream(worker.channel.port2)
    const done = replicate(stream, () => {})
    worker.channel.port1.postMessage({ type: 'error', error: { severity: 'ERROR', code: '55000', message: 'replication slot "s" was dropped' } } satisfies WorkerToPage)
    await expect(done).rejects.toMatchObject({ code: '55000' })
  })
})
