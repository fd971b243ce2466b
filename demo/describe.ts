// One line of text per pgoutput message, for the inspector.

import { formatLsn, type PgoutputMessage, type TupleColumn } from '../src/client'

export type Relation = Extract<PgoutputMessage, { tag: 'R' }>

const KIND_NAMES: Record<PgoutputMessage['tag'], string> = {
  B: 'Begin', C: 'Commit', O: 'Origin', R: 'Relation', Y: 'Type', I: 'Insert', U: 'Update', D: 'Delete', T: 'Truncate', M: 'Message',
  S: 'Stream Start', E: 'Stream Stop', c: 'Stream Commit', A: 'Stream Abort',
}

/** Names of common built-in types, so a Relation reads like a table definition. */
const TYPE_NAMES: Record<number, string> = {
  16: 'bool', 17: 'bytea', 20: 'int8', 21: 'int2', 23: 'int4', 25: 'text', 26: 'oid', 114: 'json', 700: 'float4', 701: 'float8',
  1042: 'bpchar', 1043: 'varchar', 1082: 'date', 1083: 'time', 1114: 'timestamp', 1184: 'timestamptz', 1186: 'interval',
  1700: 'numeric', 2950: 'uuid', 3802: 'jsonb', 1007: 'int4[]', 1009: 'text[]', 1016: 'int8[]',
}

export const kindName = (m: PgoutputMessage) => KIND_NAMES[m.tag]

/** What identifies a row's old version in updates and deletes (the Relation's replica identity). */
const IDENTITY: Record<string, string> = {
  d: "default: the primary key's columns (KEY below)",
  f: 'full: every column',
  i: 'an index: its columns (KEY below)',
  n: 'nothing',
}

function value(c: TupleColumn): string {
  switch (c.kind) {
    case 'n': return 'NULL'
    case 'u': return '(unchanged toast)'
    case 't': return `'${c.value.length > 60 ? `${c.value.slice(0, 60)}…` : c.value}'`
    case 'b': return `<${c.value.length} bytes>`
  }
}

const tuple = (cols: TupleColumn[], rel?: Relation) =>
  cols.map((c, i) => (rel?.columns[i] ? `${rel.columns[i].name}=${value(c)}` : value(c))).join(', ')

/**
 * An old key tuple ('K'): only the replica identity's columns carry values;
 * pgoutput sends the others as null, which is not what they held.
 */
const keyTuple = (cols: TupleColumn[], rel?: Relation) =>
  rel ? cols.flatMap((c, i) => (rel.columns[i] && rel.columns[i].flags & 1 ? [`${rel.columns[i].name}=${value(c)}`] : [])).join(', ') : tuple(cols)

const old = (t: { kind: 'K' | 'O'; columns: TupleColumn[] }, rel?: Relation) =>
  t.kind === 'K' ? `old key (${keyTuple(t.columns, rel)})` : `old row (${tuple(t.columns, rel)})`

/** What each kind of message is, for its line's hover: the protocol's terms in plain words. */
const MEANINGS: Partial<Record<PgoutputMessage['tag'], string>> = {
  B: 'Begin: a transaction\'s changes follow. final LSN: where its commit record is in the WAL; xid: its transaction id on the primary.',
  C: 'Commit: the transaction\'s changes end here. end LSN: the WAL position just after the commit, which the consumer acknowledges once applied.',
  R: "Relation: describes a table before its first change in the stream (and again after it is altered). oid: the table's id in the primary's catalog, which the changes refer to; replica identity: the columns that identify a row's old version in updates and deletes (marked KEY); each column with its type's oid.",
  Y: "Type: names a column's type that is not built in (by its oid) before a change uses it.",
  I: 'Insert: the new row, every column as text (or NULL).',
  U: "Update: the row's new values. 'old key' (the replica identity's columns) or 'old row' (REPLICA IDENTITY FULL) comes first when the key changed or identity is full.",
  D: "Delete: which row went. Under the default replica identity only its key columns are sent ('old key'); other columns are not NULL, just not sent. REPLICA IDENTITY FULL sends the whole 'old row'.",
  T: 'Truncate: every row of these tables went, in one statement.',
  M: 'Message: pg_logical_emit_message() from the primary: a prefix and content, inside its transaction or on its own (non-transactional).',
}

export const meaning = (m: PgoutputMessage): string => MEANINGS[m.tag] ?? `${kindName(m)} (pgoutput message)`

/** The summary of a folded transaction: its changes by kind and table ("2 inserts into public.todos, 1 delete from ..."). */
export function changeSummary(counts: Map<string, number>): string {
  if (counts.size === 0) return 'no changes'
  return [...counts].map(([key, n]) => {
    const [kind, table] = key.split(' ', 2)
    const noun = { I: 'insert', U: 'update', D: 'delete', T: 'truncate', M: 'message' }[kind] ?? kind
    const prep = kind === 'I' ? 'into' : kind === 'M' ? '' : kind === 'U' ? 'of' : 'from'
    return `${n} ${noun}${n === 1 ? '' : 's'}${table ? ` ${prep} ${table}` : ''}`
  }).join(', ')
}

/** `relations` maps relation OIDs to the last Relation message seen for them. */
export function describe(m: PgoutputMessage, relations: Map<number, Relation>): string {
  const name = (oid: number) => {
    const r = relations.get(oid)
    return r ? `${r.namespace}.${r.relation}` : `relation ${oid}`
  }
  switch (m.tag) {
    case 'B':
      return `xid ${m.xid}, final LSN ${formatLsn(m.finalLsn)}`
    case 'C':
      return `commit LSN ${formatLsn(m.commitLsn)}, end ${formatLsn(m.endLsn)}`
    case 'R': {
      const cols = m.columns.map(
        (c) => `${c.name} ${TYPE_NAMES[c.typeOid] ?? 'type'} (oid ${c.typeOid}${c.typeMod >= 0 ? `, typmod ${c.typeMod}` : ''})${c.flags & 1 ? ' KEY' : ''}`,
      )
      return `${m.namespace}.${m.relation} (oid ${m.relationOid}, replica identity ${IDENTITY[m.replicaIdentity] ?? m.replicaIdentity}): ${cols.join(', ')}`
    }
    case 'Y':
      return `${m.namespace}.${m.typeName} (oid ${m.typeOid})`
    case 'I':
      return `${name(m.relationOid)} new (${tuple(m.new.columns, relations.get(m.relationOid))})`
    case 'U': {
      const rel = relations.get(m.relationOid)
      return `${name(m.relationOid)}${m.old ? ` ${old(m.old, rel)}` : ''} new (${tuple(m.new.columns, rel)})`
    }
    case 'D':
      return `${name(m.relationOid)} ${old(m.old, relations.get(m.relationOid))}`
    case 'T':
      return `${m.relationOids.map(name).join(', ')}${m.flags & 1 ? ' CASCADE' : ''}${m.flags & 2 ? ' RESTART IDENTITY' : ''}`
    case 'M': {
      // Messages can be large (zero-cache sends whole schemas): the raw bytes hold the rest.
      const text = new TextDecoder().decode(m.content)
      return `${m.flags & 1 ? 'transactional' : 'non-transactional'} "${m.prefix}": ${text.length > 160 ? `${text.slice(0, 160)}… (${m.content.length} bytes)` : text}`
    }
    case 'O':
      return `${m.originName} at ${formatLsn(m.originLsn)}`
    case 'S':
      return `xid ${m.xid}${m.firstSegment ? ', first segment' : ''}`
    case 'E':
      return ''
    case 'c':
      return `xid ${m.xid}, commit LSN ${formatLsn(m.commitLsn)}, end ${formatLsn(m.endLsn)}`
    case 'A':
      return `xid ${m.xid}${m.subXid !== m.xid ? `, subtransaction ${m.subXid}` : ''}`
  }
}
