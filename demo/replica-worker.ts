// The in-tab replica: a second PostgreSQL (PGlite, in memory) in its own
// worker. It loads the copy the page took, then reads its slot's stream
// directly from the database worker (the port was transferred here, so
// frames never pass through the page), applies each transaction as one
// transaction, and acknowledges it once applied.

import { PGlite } from '@electric-sql/pglite'
import * as Comlink from 'comlink'
import { formatLsn, replicate, ReplicaApplier, ReplicationStream, type PgoutputMessage } from '../src/client'
import { checksums, sampleRows, type TableRef } from './checksum'
import type { Snapshot } from './snapshot'

export interface ReplicaProgress {
  applied: string
  transactions: number
  error?: string
}

let db: PGlite | null = null

async function boot(): Promise<number> {
  const started = performance.now()
  db = await PGlite.create()
  return performance.now() - started
}

function database(): PGlite {
  if (!db) throw new Error('the replica has not booted')
  return db
}

/** The copy goes through the applier as one synthetic transaction: the same code creates the tables the stream later alters. */
function* copyMessages(snapshot: Snapshot): Generator<PgoutputMessage> {
  yield { tag: 'B', finalLsn: 0n, commitTime: 0n, xid: 0 }
  for (const t of snapshot.tables) {
    yield t.relation
    for (const row of t.rows) {
      yield { tag: 'I', relationOid: t.relation.relationOid, new: { kind: 'N', columns: row.map((v) => (v === null ? { kind: 'n' } : { kind: 't', value: v })) } }
    }
  }
  yield { tag: 'C', flags: 0, commitLsn: 0n, endLsn: 0n, commitTime: 0n }
}

const api = {
  boot,

  async start(port: MessagePort, snapshot: Snapshot, progress: (p: ReplicaProgress) => void): Promise<void> {
    const applier = new ReplicaApplier(database())
    for (const m of copyMessages(snapshot)) await applier.apply(m)
    const stream = new ReplicationStream(port)
    let transactions = 0
    let applied = snapshot.lsn
    // replicate() acknowledges each transaction once the applier committed it.
    const apply = async (m: PgoutputMessage) => {
      await applier.apply(m)
      if (m.tag === 'C') transactions++
    }
    void replicate(stream, apply, {
      onApplied: (lsn) => {
        if (formatLsn(lsn) === applied) return // a keepalive with nothing new
        applied = formatLsn(lsn)
        progress({ applied, transactions })
      },
    }).catch((e: unknown) => {
      progress({ applied, transactions, error: e instanceof Error ? e.message : String(e) })
    })
    progress({ applied, transactions })
  },

  checksums(tables: TableRef[]) {
    return checksums(database(), tables)
  },

  rows(table: TableRef, limit: number) {
    return sampleRows(database(), table, limit)
  },
}

export type ReplicaApi = typeof api

Comlink.expose(api)
