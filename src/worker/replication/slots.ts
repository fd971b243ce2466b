// Replication slots: persisted in _tabgres.slots; "active" is per process
// (a slot is active while a session in this engine streams from it).

import type { PGlite } from '@electric-sql/pglite'
import { PgError, SqlState } from '../../shared/errors'
import { formatLsn, parseLsn, type Lsn } from '../../shared/lsn'
import { literal, type IdleSession } from './exclusive'

export interface Slot {
  name: string
  plugin: string
  temporary: boolean
  confirmedFlush: Lsn
  restart: Lsn
}

/** A streaming session holding a slot; `done` settles when it releases the slot. */
export interface SlotOwner {
  readonly done: Promise<unknown>
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

export function slotInUse(name: string): PgError {
  return new PgError({
    code: SqlState.objectInUse,
    message: `replication slot "${name}" is active for PID ${process_id}`,
  })
}

/** A stable stand-in for a backend PID: PGlite has one backend. */
export const process_id = 1

/** A slot by name; any name (PostgreSQL validates names only when creating: others are 42704). */
export async function readSlot(s: IdleSession, name: string): Promise<Slot | null> {
  const rows = await s.query(
    `SELECT slot_name, plugin, temporary, confirmed_flush_lsn, restart_lsn FROM _tabgres.slots WHERE slot_name = ${literal(name)}`,
  )
  if (rows.length === 0) return null
  const [n, plugin, temporary, confirmed, restart] = rows[0]
  return { name: n!, plugin: plugin!, temporary: temporary === 't', confirmedFlush: parseLsn(confirmed!)!, restart: parseLsn(restart!)! }
}

export async function insertSlot(s: IdleSession, name: string, temporary: boolean, at: Lsn): Promise<Slot> {
  validateSlotName(name)
  if ((await readSlot(s, name)) !== null) {
    throw new PgError({ code: SqlState.duplicateObject, message: `replication slot "${name}" already exists` })
  }
  const lsn = literal(formatLsn(at))
  await s.query(
    `INSERT INTO _tabgres.slots (slot_name, temporary, restart_lsn, confirmed_flush_lsn) VALUES (${literal(name)}, ${temporary}, ${lsn}, ${lsn})`,
  )
  return { name, plugin: 'pgoutput', temporary, confirmedFlush: at, restart: at }
}

export async function deleteSlot(s: IdleSession, name: string): Promise<boolean> {
  const rows = await s.query(`DELETE FROM _tabgres.slots WHERE slot_name = ${literal(name)} RETURNING 1`)
  return rows.length > 0
}

/** Advance confirmed_flush_lsn (never backwards). */
export async function confirmSlot(s: IdleSession, name: string, lsn: Lsn): Promise<void> {
  const l = literal(formatLsn(lsn))
  await s.query(
    `UPDATE _tabgres.slots SET confirmed_flush_lsn = ${l}, restart_lsn = ${l} WHERE slot_name = ${literal(name)} AND confirmed_flush_lsn < ${l}`,
  )
}

/** Record liveness for pg_replication_slots (active, active_pid, inactive_since). */
export async function markSlotActive(s: IdleSession, name: string, active: boolean): Promise<void> {
  await s.query(
    active
      ? `UPDATE _tabgres.slots SET active_pid = ${process_id} WHERE slot_name = ${literal(name)}`
      : `UPDATE _tabgres.slots SET active_pid = NULL, inactive_since = now() WHERE slot_name = ${literal(name)}`,
  )
}

export function acquireSlot(db: PGlite, name: string, owner: SlotOwner): void {
  const m = activeSlots(db)
  if (m.has(name) && m.get(name) !== owner) throw slotInUse(name)
  m.set(name, owner)
}

export function releaseSlot(db: PGlite, name: string, owner: SlotOwner): void {
  const m = activeSlots(db)
  if (m.get(name) === owner) m.delete(name)
}

export function isSlotActive(db: PGlite, name: string): boolean {
  return activeSlots(db).has(name)
}

/** Resolves when the session streaming from the slot (if any) has released it. */
export async function slotReleased(db: PGlite, name: string): Promise<void> {
  for (let owner = activeSlots(db).get(name); owner; owner = activeSlots(db).get(name)) {
    await owner.done.catch(() => {})
  }
}
