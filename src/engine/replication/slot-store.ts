// Replication slots kept outside the backend, as PostgreSQL keeps them (a
// state file per slot under pg_replslot/, written outside any transaction).
//
// A slot must exist the moment CREATE_REPLICATION_SLOT returns and survive a
// ROLLBACK of whatever transaction another session holds open, and walsender
// commands must never wait for the one backend that every session shares.
// So the engine owns slot state in memory and mirrors it to one file in the
// data directory, <PGDATA>/pg_tabgres/slots.json: written whole (temp file,
// then rename) on every change, read back when the database opens, and read
// by SQL through pg_read_file (the pg_replication_slots view in
// capture/slots.sql). SQL never writes it: the slot functions ask the
// engine to (backend/control.ts), which keeps one writer.
//
// In Node the file lands on disk at once; in the tab, GroupCommitIdbFs sees the
// write like any other file and the next flush stores it.

import { PgError, SqlState } from '../../protocol/errors'
import { formatLsn, parseLsn, type Lsn } from '../../protocol/lsn'
import { unknownSlot, validateSlotName } from './slots'

export interface SlotState {
  name: string
  plugin: string
  temporary: boolean
  confirmedFlush: Lsn
  restart: Lsn
  createdAt: string
  /** The walsender (or SQL session) using the slot, or null. */
  activePid: number | null
  inactiveSince: string | null
}

/** The parts of Emscripten's FS the store uses. */
export interface StoreFs {
  analyzePath(path: string): { exists: boolean }
  mkdir(path: string): void
  readFile(path: string, opts: { encoding: 'utf8' }): string
  writeFile(path: string, data: string): void
  rename(from: string, to: string): void
}

/** Relative to the data directory: what pg_read_file is given. */
export const SLOTS_FILE = 'pg_tabgres/slots.json'

/** The file's JSON: the columns of pg_replication_slots the view reads. */
interface SlotRecord {
  slot_name: string
  plugin: string
  temporary: boolean
  restart_lsn: string
  confirmed_flush_lsn: string
  created_at: string
  active_pid: number | null
  inactive_since: string | null
}

export class SlotStore {
  private readonly slots = new Map<string, SlotState>()
  private readonly path: string
  /** Counts writes of the file: storage that copies changed files (group commit) compares it. */
  version = 0

  constructor(
    private readonly fs: StoreFs,
    private readonly dataDir: string,
  ) {
    this.path = `${dataDir}/${SLOTS_FILE}`
  }

  /**
   * Reads the file. A restart ends every session: temporary slots go, as in
   * PostgreSQL, and no slot is active. `migrate` adds slots an older layout
   * kept elsewhere (a table), when the file does not exist yet.
   */
  open(migrate: SlotState[] = []): void {
    this.slots.clear()
    const exists = this.fs.analyzePath(this.path).exists
    const records: SlotRecord[] = exists ? JSON.parse(this.fs.readFile(this.path, { encoding: 'utf8' })) : []
    const now = new Date().toISOString()
    for (const r of records) {
      if (r.temporary) continue
      this.slots.set(r.slot_name, {
        name: r.slot_name,
        plugin: r.plugin,
        temporary: false,
        confirmedFlush: parseLsn(r.confirmed_flush_lsn)!,
        restart: parseLsn(r.restart_lsn)!,
        createdAt: r.created_at,
        activePid: null,
        inactiveSince: r.active_pid === null ? r.inactive_since : now,
      })
    }
    if (!exists) for (const s of migrate) if (!s.temporary) this.slots.set(s.name, { ...s, activePid: null })
    this.save()
  }

  get(name: string): SlotState | undefined {
    return this.slots.get(name)
  }

  list(): SlotState[] {
    return [...this.slots.values()]
  }

  /** The lowest confirmed position over all slots, or null without slots (the pruning horizon). */
  minConfirmed(): Lsn | null {
    let min: Lsn | null = null
    for (const s of this.slots.values()) if (min === null || s.confirmedFlush < min) min = s.confirmedFlush
    return min
  }

  create(name: string, temporary: boolean, at: Lsn, activePid: number | null = null): SlotState {
    validateSlotName(name)
    if (this.slots.has(name)) {
      throw new PgError({ code: SqlState.duplicateObject, message: `replication slot "${name}" already exists` })
    }
    const now = new Date().toISOString()
    const slot: SlotState = {
      name,
      plugin: 'pgoutput',
      temporary,
      confirmedFlush: at,
      restart: at,
      createdAt: now,
      activePid,
      inactiveSince: activePid === null ? now : null,
    }
    this.slots.set(name, slot)
    this.save()
    return slot
  }

  drop(name: string): void {
    if (!this.slots.delete(name)) throw unknownSlot(name)
    this.save()
  }

  /** Advance confirmed_flush_lsn (and restart_lsn with it); never backwards. Returns the slot's position. */
  confirm(name: string, lsn: Lsn): Lsn | null {
    const s = this.slots.get(name)
    if (!s) return null
    if (lsn > s.confirmedFlush) {
      s.confirmedFlush = s.restart = lsn
      this.save()
    }
    return s.confirmedFlush
  }

  setActive(name: string, pid: number | null): void {
    const s = this.slots.get(name)
    if (!s || s.activePid === pid) return
    s.activePid = pid
    s.inactiveSince = pid === null ? new Date().toISOString() : null
    this.save()
  }

  private save(): void {
    const records: SlotRecord[] = this.list().map((s) => ({
      slot_name: s.name,
      plugin: s.plugin,
      temporary: s.temporary,
      restart_lsn: formatLsn(s.restart),
      confirmed_flush_lsn: formatLsn(s.confirmedFlush),
      created_at: s.createdAt,
      active_pid: s.activePid,
      inactive_since: s.inactiveSince,
    }))
    const dir = this.path.slice(0, this.path.lastIndexOf('/'))
    if (!this.fs.analyzePath(dir).exists) this.fs.mkdir(dir)
    // Whole or not at all: a crash mid-write leaves the previous file.
    this.fs.writeFile(`${this.path}.tmp`, JSON.stringify(records))
    this.fs.rename(`${this.path}.tmp`, this.path)
    this.version++
  }
}
