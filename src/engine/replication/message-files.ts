// Non-transactional logical decoding messages
// (pg_logical_emit_message(false, ...)) go out even when the transaction
// that emitted them rolls back, as PostgreSQL sends them: its decoder sends
// such a message as soon as it reads the WAL record. Everything else the
// capture writes is rolled back with the transaction, so these messages are
// kept where a rollback cannot reach: one file each in the data directory,
// written by COPY ... TO (capture/shims.sql), named by the message's sequence
// number. The reader lists the directory only when a batch's sequence
// numbers have a gap (a rollback or such a message took numbers that left no
// change-log row), merges them in sequence order, and pruning deletes those
// every slot has passed.

import type { StoreFs } from './slot-store'

/** Relative to the data directory (what pg_ls_dir and pg_read_file are given). */
export const MESSAGES_DIR = 'pg_tabgres/messages'

/** A file's name: the sequence number, zero-padded so names sort as numbers. */
export const messageFileName = (seq: bigint): string => seq.toString().padStart(20, '0')

export interface MessageFs extends StoreFs {
  readdir(path: string): string[]
  unlink(path: string): void
}

export class MessageFiles {
  private readonly dir: string

  constructor(
    private readonly fs: MessageFs,
    dataDir: string,
  ) {
    this.dir = `${dataDir}/${MESSAGES_DIR}`
    const parent = this.dir.slice(0, this.dir.lastIndexOf('/'))
    if (!fs.analyzePath(parent).exists) fs.mkdir(parent)
    if (!fs.analyzePath(this.dir).exists) fs.mkdir(this.dir)
  }

  /** Deletes the messages at or below `cut` (every slot has confirmed past them). */
  prune(cut: bigint): number {
    if (cut < 0n) return 0
    const last = messageFileName(cut)
    let n = 0
    for (const name of this.fs.readdir(this.dir)) {
      if (name === '.' || name === '..' || name > last) continue
      this.fs.unlink(`${this.dir}/${name}`)
      n++
    }
    return n
  }
}
