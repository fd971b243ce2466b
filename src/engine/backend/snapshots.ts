// Exported snapshots: SET TRANSACTION SNAPSHOT on one backend.
//
// PostgreSQL lets other sessions import a snapshot that CREATE_REPLICATION_SLOT
// (EXPORT_SNAPSHOT) exported, so that table copies read exactly the data the
// slot's stream starts after. PGlite has one backend and no second MVCC view
// to hand out, so tabgres freezes the data instead, for as long as anyone
// reads it:
// - The first import fixes the consistent point: the committed position at
//   that moment. The slot is advanced to it, so START_REPLICATION from the
//   point CREATE_REPLICATION_SLOT reported streams exactly the transactions
//   committed after what the copies read. (Writes between the slot's creation
//   and the first import are in the copies and not in the stream. zero-cache
//   commits one itself after creating its slot, so making writers wait from
//   the slot's creation would deadlock it.)
// - From the first import until the last importing transaction ends, the
//   importers are a group that holds the backend (./arbiter.ts) and take
//   turns in it; other sessions wait, bounded as every wait is. Nothing can
//   commit meanwhile, so every importer reads the same data.
// - A later import, while the exporter still allows it, is accepted when
//   nothing was committed since the group ended; otherwise 22023, saying why.
// The exporter's next command, or its end, expires the snapshot (as in
// PostgreSQL), and so does a later import that finds the data changed.

import { PgError } from '../../protocol/errors'
import type { Lease, WaitBounds, Arbiter } from './arbiter'

export interface SnapshotHost {
  readonly arbiter: Arbiter
  /** The committed position (change-log sequence number) now. */
  committed(): bigint
  /** Advance the slot's confirmed and restart positions to the consistent point. */
  advanceSlot(slot: string, position: bigint): void
}

/** One turn at a time inside the group's hold on the backend. */
export class SnapshotGroup {
  members = 0
  private tail: Promise<void> = Promise.resolve()

  constructor(
    readonly snapshot: ExportedSnapshot,
    readonly lease: Lease,
  ) {}

  /** Waits for the group's backend; resolves with the function that ends the turn. */
  turn(): Promise<() => void> {
    let end!: () => void
    const mine = new Promise<void>((r) => (end = r))
    const before = this.tail
    this.tail = before.then(() => mine)
    return before.then(() => end)
  }
}

export interface ExportedSnapshot {
  readonly id: string
  readonly exporterPid: number
  readonly slot: string | null
  valid: boolean
  /** Fixed at the first import. */
  consistentPoint: bigint | null
  group: SnapshotGroup | null
  /** The committed position when the last group ended. */
  frozenAt: bigint | null
}

export function invalidSnapshot(id: string, detail?: string): PgError {
  return new PgError({ code: '22023', message: `invalid snapshot identifier: "${id}"`, detail })
}

export class Snapshots {
  private readonly byId = new Map<string, ExportedSnapshot>()
  private counter = 0

  constructor(private readonly host: SnapshotHost) {}

  /** A new snapshot exported by `pid` (for `slot`, when a slot was created with it). */
  export(pid: number, slot: string | null): string {
    const hex = (n: number) => (n >>> 0).toString(16).toUpperCase().padStart(8, '0')
    const id = `${hex(pid)}-${hex(++this.counter)}-1`
    this.byId.set(id, { id, exporterPid: pid, slot, valid: true, consistentPoint: null, group: null, frozenAt: null })
    return id
  }

  /** The exporter ran another command or ended: its snapshots can no longer be imported. */
  expire(pid: number): void {
    for (const s of this.byId.values()) {
      if (s.exporterPid !== pid) continue
      s.valid = false
      if (!s.group) this.byId.delete(s.id)
    }
  }

  /**
   * Joins (or starts) the group reading snapshot `id`. Waiting for the backend
   * is bounded by the importer's bounds. Throws 22023 for an unknown, expired
   * or no longer reproducible snapshot.
   */
  async import(id: string, pid: number, bounds: WaitBounds): Promise<SnapshotGroup> {
    const s = this.byId.get(id)
    if (!s || !s.valid) throw invalidSnapshot(id)
    if (s.group) {
      s.group.members++
      return s.group
    }
    const lease = await this.host.arbiter.acquire(pid, bounds)
    if (s.group) {
      // Another importer started the group while this one waited.
      lease.release()
      ;(s.group as SnapshotGroup).members++
      return s.group
    }
    const now = this.host.committed()
    if (!s.valid) {
      lease.release()
      throw invalidSnapshot(id)
    }
    if (s.consistentPoint === null) {
      s.consistentPoint = now
      if (s.slot) this.host.advanceSlot(s.slot, now)
    } else if (s.frozenAt !== now) {
      lease.release()
      s.valid = false
      this.byId.delete(s.id)
      throw invalidSnapshot(
        id,
        'Transactions committed since the last transaction importing it ended; tabgres keeps an exported snapshot only while the data is unchanged, as it has one backend and no older row versions to read.',
      )
    }
    s.group = new SnapshotGroup(s, lease)
    s.group.members = 1
    return s.group
  }

  /** An importing transaction ended. The last one out gives the backend back. */
  leave(group: SnapshotGroup): void {
    group.members--
    if (group.members > 0) return
    const s = group.snapshot
    s.group = null
    s.frozenAt = this.host.committed()
    if (!s.valid) this.byId.delete(s.id)
    group.lease.release()
  }
}
