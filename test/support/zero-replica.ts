// zero-cache's replica (SQLite) as the tests see it, read through a Node 22
// child (sqlite-reader.mjs).

import { spawn, type ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { node22 } from '../../src/node/zero-cache'

export type SqliteValue = string | number | null | { bigint: string }

export class ReplicaReader {
  private readonly child: ChildProcess
  private next = 0
  private readonly waiting = new Map<number, { resolve(rows: Record<string, SqliteValue>[]): void; reject(e: Error): void }>()

  constructor(file: string) {
    const node = node22()
    if (!node.path) throw new Error(node.why)
    this.child = spawn(node.path, [fileURLToPath(new URL('./sqlite-reader.mjs', import.meta.url)), file], {
      stdio: ['pipe', 'pipe', 'inherit'],
    })
    createInterface({ input: this.child.stdout! }).on('line', (line) => {
      const reply = JSON.parse(line) as { id: number; rows?: Record<string, SqliteValue>[]; error?: string }
      const w = this.waiting.get(reply.id)
      this.waiting.delete(reply.id)
      if (reply.error !== undefined) w?.reject(new Error(reply.error))
      else w?.resolve(reply.rows!)
    })
    this.child.once('exit', (code) => {
      for (const w of this.waiting.values()) w.reject(new Error(`the replica reader exited (${code})`))
      this.waiting.clear()
    })
  }

  query(sql: string): Promise<Record<string, SqliteValue>[]> {
    const id = this.next++
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject })
      this.child.stdin!.write(JSON.stringify({ id, sql }) + '\n')
    })
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      if (this.child.exitCode !== null) return resolve()
      this.child.once('exit', () => resolve())
      this.child.stdin!.end()
    })
  }
}
