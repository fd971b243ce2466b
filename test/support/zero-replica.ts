// zero-cache's replica (SQLite) as the tests see it: read through a Node 22
// child (sqlite-reader.mjs) for a replica file, or asked of the process that
// holds it in memory (zero-wasm/run.ts: requests on its stdin, replies on fd 3).

import { spawn, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import type { Readable, Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { node22 } from '../../src/node/zero-cache'

export type SqliteValue = string | number | null | { bigint: string }

export class ReplicaReader {
  private readonly child: ChildProcess | null
  private readonly requests: Writable
  private next = 0
  private readonly waiting = new Map<number, { resolve(rows: Record<string, SqliteValue>[]): void; reject(e: Error): void }>()

  constructor(from: string | { requests: Writable; replies: Readable; process: ChildProcess }) {
    let replies: Readable
    if (typeof from === 'string') {
      const node = node22()
      if (!node.path) throw new Error(node.why)
      this.child = spawn(node.path, [fileURLToPath(new URL('./sqlite-reader.mjs', import.meta.url)), from], {
        stdio: ['pipe', 'pipe', 'inherit'],
      })
      this.requests = this.child.stdin!
      replies = this.child.stdout!
    } else {
      this.child = null
      this.requests = from.requests
      replies = from.replies
      from.process.once('exit', (code) => this.#fail(code))
    }
    createInterface({ input: replies }).on('line', (line) => {
      const reply = JSON.parse(line) as { id: number; rows?: Record<string, SqliteValue>[]; error?: string }
      const w = this.waiting.get(reply.id)
      this.waiting.delete(reply.id)
      if (reply.error !== undefined) w?.reject(new Error(reply.error))
      else w?.resolve(reply.rows!)
    })
    this.child?.once('exit', (code) => this.#fail(code))
  }

  #fail(code: number | null): void {
    for (const w of this.waiting.values()) w.reject(new Error(`the replica reader exited (${code})`))
    this.waiting.clear()
  }

  query(sql: string): Promise<Record<string, SqliteValue>[]> {
    const id = this.next++
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject })
      this.requests.write(JSON.stringify({ id, sql }) + '\n')
    })
  }

  close(): Promise<void> {
    const child = this.child
    // A process that holds the replica itself is stopped by its owner.
    if (!child) return Promise.resolve()
    return new Promise((resolve) => {
      if (child.exitCode !== null) return resolve()
      child.once('exit', () => resolve())
      child.stdin!.end()
    })
  }
}
