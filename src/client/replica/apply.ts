// A logical replica: applies decoded pgoutput messages to a target database
// (PGlite in memory, in a worker or in Node; any client with query/exec).
// Each Begin..Commit becomes one transaction on the target; the commit's LSNs
// are known once it is applied, for the caller to acknowledge. Relation
// messages create and reshape the target's tables (./schema.ts); row messages
// become INSERT/UPDATE/DELETE/TRUNCATE with values bound as text parameters
// (./sql.ts). Pure TypeScript with no Node or DOM API: it runs in a page, a
// Web Worker or Node.
// Spec: PostgreSQL docs, "Logical Replication Message Formats"; the
// subscriber's apply worker (src/backend/replication/logical/worker.c) is
// the model for how each message lands.

import type { Lsn } from '../../protocol/lsn'
import type { PgoutputMessage, Tuple, TupleColumn } from '../../protocol/pgoutput'
import { TRUNCATE_CASCADE, TRUNCATE_RESTART_IDENTITY } from '../../protocol/pgoutput'
import { KEY_FLAG, syncRelation, type ApplySession, type RelationMessage, type TypeMessage } from './schema'
import { deleteSql, insertSql, qualified, updateSql, type Cell, type ColumnRef, type Locate, type Statement } from './sql'

export type { ApplySession } from './schema'

/**
 * The database a replica applies to. PGlite satisfies it. With `transaction`
 * (PGlite's interactive transaction), each replicated transaction holds the
 * target's transaction lock from Begin to Commit, so other callers on the same
 * instance (a checksum, a query from the page) wait instead of running inside
 * it; without it the applier sends BEGIN and COMMIT itself.
 */
export interface ApplyTarget extends ApplySession {
  transaction?(fn: (tx: ApplySession) => Promise<void>): Promise<unknown>
}

/** A commit applied on the target: acknowledge `endLsn` (or `commitLsn`) as flushed. */
export interface AppliedCommit {
  xid: number
  commitLsn: Lsn
  endLsn: Lsn
}

export interface ApplierOptions {
  /**
   * An UPDATE or DELETE whose row the target lacks. 'error' (the default)
   * fails the transaction: the replica has diverged. 'skip' goes on, as
   * PostgreSQL's subscriber does (it only logs).
   */
  missingRow?: 'error' | 'skip'
}

/** The applier cannot continue: a protocol problem, a diverged replica, or an earlier failure. */
export class ReplicaApplyError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'ReplicaApplyError'
  }
}

interface Relation {
  message: RelationMessage
  table: string
  columns: ColumnRef[]
}

/** An open transaction on the target. */
interface Open {
  session: ApplySession
  xid: number
  /** Ends the transaction: commit (true) or roll back (false); resolves with a failure, if any. */
  end(commit: boolean): Promise<unknown>
}

/** Thrown inside target.transaction() to make it roll back. */
const ROLLBACK = Symbol('rollback')

const cell = (c: TupleColumn): Cell => {
  if (c.kind === 't') return c.value
  if (c.kind === 'n') return null
  if (c.kind === 'u') return undefined
  throw new ReplicaApplyError('binary tuple data is not supported: start the stream without the binary option')
}

export class ReplicaApplier {
  /** Relations described by the current stream (cleared by reset()). */
  private readonly relations = new Map<number, Relation>()
  /**
   * The last Relation of each OID that a committed transaction applied: where
   * its table is on the target. It outlives reset(), so a table renamed on the
   * primary while the stream was down is renamed here, not created anew.
   */
  private readonly committed = new Map<number, RelationMessage>()
  /** Relations applied by the open transaction: committed with it, or forgotten. */
  private readonly pending = new Map<number, RelationMessage>()
  private readonly types = new Map<number, TypeMessage>()
  private open: Open | null = null
  private tail: Promise<unknown> = Promise.resolve()
  private failure: unknown = null
  private last: AppliedCommit | null = null
  private count = 0

  constructor(
    private readonly target: ApplyTarget,
    private readonly options: ApplierOptions = {},
  ) {}

  /** The last transaction committed on the target. */
  get lastCommit(): AppliedCommit | null {
    return this.last
  }

  /** Transactions committed on the target so far. */
  get transactions(): number {
    return this.count
  }

  /** Between Begin and Commit. */
  get inTransaction(): boolean {
    return this.open !== null
  }

  /**
   * Applies one message, in call order (calls queue; awaiting each is not
   * required). Resolves with the commit for a Commit message once the target
   * committed it, else null. A failure on the target rejects with the target's
   * own error, rolls the transaction back, and makes every later call reject
   * until reset().
   */
  apply(m: PgoutputMessage): Promise<AppliedCommit | null> {
    const run = this.tail.then(() => this.step(m))
    this.tail = run.catch(() => {})
    return run
  }

  /**
   * Rolls back a transaction left open (its stream ended before Commit) and
   * forgets the stream's relations and any failure: call it before applying
   * a new stream, which sends its Relation messages again. Where each
   * relation's table is (by OID) is kept, for renames.
   */
  reset(): Promise<void> {
    const run = this.tail.then(async () => {
      const open = this.open
      this.open = null
      this.failure = null
      this.relations.clear()
      this.pending.clear()
      this.types.clear()
      if (open) await open.end(false)
    })
    this.tail = run.catch(() => {})
    return run
  }

  private async step(m: PgoutputMessage): Promise<AppliedCommit | null> {
    if (this.failure !== null) {
      throw new ReplicaApplyError('the replica applier stopped after an earlier error (call reset())', { cause: this.failure })
    }
    try {
      return await this.dispatch(m)
    } catch (e) {
      this.failure = e
      const open = this.open
      this.open = null
      this.pending.clear()
      // The target's error is what the caller needs; a failed rollback after it adds nothing.
      if (open) await open.end(false)
      throw e
    }
  }

  private async dispatch(m: PgoutputMessage): Promise<AppliedCommit | null> {
    switch (m.tag) {
      case 'B':
        if (this.open) throw new ReplicaApplyError(`Begin of xid ${m.xid} inside the open transaction of xid ${this.open.xid}`)
        this.open = await this.begin(m.xid)
        return null
      case 'C': {
        const open = this.open
        if (!open) throw new ReplicaApplyError('Commit without Begin')
        this.open = null
        const failed = await open.end(true)
        if (failed !== undefined) throw failed
        for (const [oid, r] of this.pending) this.committed.set(oid, r)
        this.pending.clear()
        this.last = { xid: open.xid, commitLsn: m.commitLsn, endLsn: m.endLsn }
        this.count++
        return this.last
      }
      case 'Y':
        this.types.set(m.typeOid, m)
        return null
      case 'R': {
        const prev = this.relations.get(m.relationOid)
        if (prev && sameRelation(prev.message, m)) return null
        // Outside a transaction (a copy, a test) the DDL autocommits.
        const s = this.open?.session ?? this.target
        const previous = prev?.message ?? this.committed.get(m.relationOid)
        const columns = await syncRelation(s, m, previous, this.types)
        this.relations.set(m.relationOid, { message: m, table: qualified(m.namespace, m.relation), columns })
        ;(this.open ? this.pending : this.committed).set(m.relationOid, m)
        return null
      }
      case 'I': {
        const rel = this.relation(m.relationOid)
        await this.run(insertSql(rel.table, rel.columns, this.cells(rel, m.new)))
        return null
      }
      case 'U': {
        const rel = this.relation(m.relationOid)
        const locate = this.locate(rel, m.old ?? m.new)
        await this.changeOne(rel, 'update', updateSql(rel.table, rel.columns, locate, this.cells(rel, m.new)))
        return null
      }
      case 'D': {
        const rel = this.relation(m.relationOid)
        await this.changeOne(rel, 'delete', deleteSql(rel.table, rel.columns, this.locate(rel, m.old)))
        return null
      }
      case 'T': {
        const tables = m.relationOids.map((oid) => this.relation(oid).table)
        const restart = m.flags & TRUNCATE_RESTART_IDENTITY ? ' RESTART IDENTITY' : ''
        const cascade = m.flags & TRUNCATE_CASCADE ? ' CASCADE' : ''
        await this.session().exec(`TRUNCATE ${tables.join(', ')}${restart}${cascade}`)
        return null
      }
      case 'O':
      case 'M':
        // Origins and logical decoding messages carry nothing to apply.
        return null
      case 'S':
      case 'E':
      case 'c':
      case 'A':
        // The replica asks for protocol 1, where no transaction is streamed.
        throw new ReplicaApplyError(`stream message '${m.tag}' on a protocol 1 stream`)
    }
  }

  /** Opens a transaction on the target, through its own transaction() when it has one. */
  private async begin(xid: number): Promise<Open> {
    const target = this.target
    if (!target.transaction) {
      await target.exec('BEGIN')
      return {
        session: target,
        xid,
        end: async (commit) => {
          try {
            await target.exec(commit ? 'COMMIT' : 'ROLLBACK')
          } catch (e) {
            return e
          }
          return undefined
        },
      }
    }
    let finish!: (commit: boolean) => void
    const decided = new Promise<boolean>((r) => (finish = r))
    let opened!: (tx: ApplySession) => void
    const ready = new Promise<ApplySession>((r) => (opened = r))
    // Settles with the failure (or undefined), so it never rejects unobserved
    // while the transaction waits for its next message.
    const done = target
      .transaction(async (tx) => {
        opened(tx)
        if (!(await decided)) throw ROLLBACK
      })
      .then(
        () => undefined,
        (e: unknown) => (e === ROLLBACK ? undefined : e ?? new ReplicaApplyError('transaction failed')),
      )
    const session = await Promise.race([
      ready,
      done.then((e) => {
        throw e ?? new ReplicaApplyError('the target ended the transaction before it began')
      }),
    ])
    return {
      session,
      xid,
      end: (commit) => {
        finish(commit)
        return done
      },
    }
  }

  private session(): ApplySession {
    if (!this.open) throw new ReplicaApplyError('a row change outside a transaction (no Begin)')
    return this.open.session
  }

  private relation(oid: number): Relation {
    const rel = this.relations.get(oid)
    if (!rel) throw new ReplicaApplyError(`relation ${oid} was used before its Relation message`)
    return rel
  }

  private cells(rel: Relation, t: Tuple): Cell[] {
    if (t.columns.length !== rel.columns.length) {
      throw new ReplicaApplyError(
        `a tuple of ${t.columns.length} columns for ${rel.table}, whose Relation has ${rel.columns.length}`,
      )
    }
    return t.columns.map(cell)
  }

  /**
   * Where the row is: the old tuple when one was sent ('K' key or 'O' full
   * row), else the new tuple's key (an update that left the key alone).
   */
  private locate(rel: Relation, t: Tuple): Locate {
    const cells = this.cells(rel, t)
    if (t.kind === 'O' || (rel.message.replicaIdentity === 'f' && t.kind !== 'K')) return { by: 'full', cells }
    const columns = rel.message.columns.flatMap((c, i) => (c.flags & KEY_FLAG ? [i] : []))
    if (!columns.length) {
      throw new ReplicaApplyError(`cannot locate a row of ${rel.table}: its relation has no replica identity`)
    }
    for (const i of columns) {
      if (cells[i] === undefined) throw new ReplicaApplyError(`key column ${rel.columns[i].name} of ${rel.table} came as unchanged TOAST`)
    }
    return { by: 'key', columns, cells }
  }

  private async run(st: Statement): Promise<{ rows: unknown[] }> {
    return this.session().query(st.sql, st.params)
  }

  private async changeOne(rel: Relation, what: 'update' | 'delete', st: Statement): Promise<void> {
    const { rows } = await this.run(st)
    if (rows.length === 0 && this.options.missingRow !== 'skip') {
      throw new ReplicaApplyError(`logical replication did not find the row to be ${what}d in ${rel.table}`)
    }
  }
}

function sameRelation(a: RelationMessage, b: RelationMessage): boolean {
  return (
    a.namespace === b.namespace &&
    a.relation === b.relation &&
    a.replicaIdentity === b.replicaIdentity &&
    a.columns.length === b.columns.length &&
    a.columns.every((c, i) => {
      const d = b.columns[i]
      return c.name === d.name && c.typeOid === d.typeOid && c.typeMod === d.typeMod && c.flags === d.flags
    })
  )
}
