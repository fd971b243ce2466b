// Replication slots: names, errors, and which session streams from a slot.
// Their state is kept by ./slot-store.ts; "active" is per process (a slot is
// active while a session in this engine streams from it).

import type { PGlite } from '@electric-sql/pglite'
import { PgError, SqlState } from '../../protocol/errors'

/** A streaming session holding a slot; `done` settles when it releases the slot. */
export interface SlotOwner {
  readonly done: Promise<unknown>
  /** The process (session) that streams, as pg_replication_slots.active_pid shows it. */
  readonly pid: number
}

const active = new WeakMap<PGlite, Map<string, SlotOwner>>()

function activeSlots(db: PGlite): Map<string, SlotOwner> {
  let m = active.get(db)
  if (!m) active.set(db, (m = new Map()))
  return m
}

/** PostgreSQL's ReplicationSlotValidateName. */
export function validateSlotName(name: string): void {
  if (name.length === 0) {
    throw new PgError({ code: '42602', message: `replication slot name "${name}" is too short` })
  }
  if (new TextEncoder().encode(name).length >= 64) {
    throw new PgError({ code: '42622', message: `replication slot name "${name}" is too long` })
  }
  if (!/^[a-z0-9_]+$/.test(name)) {
    throw new PgError({
      code: '42602',
      message: `replication slot name "${name}" contains invalid character`,
      hint: 'Replication slot names may only contain lower case letters, numbers, and the underscore character.',
    })
  }
}

export function unknownSlot(name: string): PgError {
  return new PgError({ code: SqlState.undefinedObject, message: `replication slot "${name}" does not exist` })
}

export function slotInUse(name: string, pid: number | null): PgError {
  return new PgError({
    code: SqlState.objectInUse,
    message: `replication slot "${name}" is active for PID ${pid ?? 0}`,
  })
}

export function acquireSlot(db: PGlite, name: string, owner: SlotOwner): void {
  const m = activeSlots(db)
  const held = m.get(name)
  if (held && held !== owner) throw slotInUse(name, held.pid)
  m.set(name, owner)
}

export function releaseSlot(db: PGlite, name: string, owner: SlotOwner): void {
  const m = activeSlots(db)
  if (m.get(name) === owner) m.delete(name)
}

export function isSlotActive(db: PGlite, name: string): boolean {
  return activeSlots(db).has(name)
}

/** The pid streaming from the slot, or null. */
export function slotActivePid(db: PGlite, name: string): number | null {
  return activeSlots(db).get(name)?.pid ?? null
}

/** Resolves when the session streaming from the slot (if any) has released it. */
export async function slotReleased(db: PGlite, name: string): Promise<void> {
  for (let owner = activeSlots(db).get(name); owner; owner = activeSlots(db).get(name)) {
    await owner.done.catch(() => {})
  }
}
