// Pure translation of captured rows into pgoutput messages, following
// PostgreSQL 15's pgoutput.c: which tuples an UPDATE/DELETE carries under each
// replica identity, which columns a Relation lists, which types get a Type message.

import { PgError, SqlState } from '../../protocol/errors'
import type { PgoutputMessage, Tuple, TupleColumn } from '../../protocol/pgoutput'
import { sendValue } from '../../protocol/type-send'
import type { ColumnShape, RelationShape } from './catalog'
import { parseRecord } from './record'
import type { ChangeRow } from './reader'

/** Types with OIDs below FirstGenbkiObjectId are built in: no Type message. */
const FIRST_GENBKI_OBJECT_ID = 10000

export function relationMessages(relid: number, shape: RelationShape): PgoutputMessage[] {
  const out: PgoutputMessage[] = []
  const columns = shape.columns.filter((c) => !c.generated)
  for (const c of columns) {
    if (c.typeOid >= FIRST_GENBKI_OBJECT_ID) {
      out.push({ tag: 'Y', typeOid: c.typeOid, namespace: c.typeNamespace, typeName: c.typeName })
    }
  }
  out.push({
    tag: 'R',
    relationOid: relid,
    // pgoutput sends an empty namespace for pg_catalog only; user tables never live there.
    namespace: shape.namespace,
    relation: shape.name,
    replicaIdentity: shape.replicaIdentity,
    columns: columns.map((c) => ({ flags: c.key ? 1 : 0, name: c.name, typeOid: c.typeOid, typeMod: c.typeMod })),
  })
  return out
}

function fields(text: string, parsed: (string | null)[] | null | undefined, shape: RelationShape): (string | null)[] {
  if (shape.columns.length === 0) return []
  const f = parsed ?? parseRecord(text)
  if (f.length !== shape.columns.length) {
    throw new Error(`captured row has ${f.length} fields, relation ${shape.name} has ${shape.columns.length} columns`)
  }
  return f
}

/** How a tuple's values go out: text ('t'), or each type's binary send format ('b', `binary 'true'`). */
export type ValueFormat = 'text' | 'binary'

function col(v: string | null, c: ColumnShape, format: ValueFormat): TupleColumn {
  if (v === null) return { kind: 'n' }
  if (format === 'text') return { kind: 't', value: v }
  if (!c.send) {
    throw new PgError({
      code: SqlState.featureNotSupported,
      message: `binary output of column "${c.name}" needs its type's send function, which this table's recorded shape predates`,
      hint: 'Any ALTER TABLE of the table records its shape anew.',
    })
  }
  return { kind: 'b', value: sendValue(v, { send: c.send, elemOid: c.elemOid ?? undefined, elemSend: c.elemSend ?? undefined }) }
}

function tuple<K extends 'N' | 'K' | 'O'>(
  kind: K,
  values: (string | null)[],
  shape: RelationShape,
  format: ValueFormat,
  keyOnly = false,
  unchangedToast: number[] | null = null,
): Tuple<K> {
  const columns: TupleColumn[] = []
  shape.columns.forEach((c, i) => {
    if (c.generated) return
    if (keyOnly && !c.key) columns.push({ kind: 'n' })
    else if (unchangedToast?.includes(i + 1)) columns.push({ kind: 'u' })
    else columns.push(col(values[i], c, format))
  })
  return { kind, columns }
}

function hasIdentity(shape: RelationShape): boolean {
  return shape.replicaIdentity === 'f' || shape.columns.some((c) => c.key)
}

/** The row message for one captured change, or null when pgoutput sends none. */
export function changeMessage(row: ChangeRow, shape: RelationShape, format: ValueFormat = 'text'): PgoutputMessage | null {
  const relationOid = row.relid
  switch (row.op) {
    case 'I':
      return { tag: 'I', relationOid, new: tuple('N', fields(row.newRow!, row.newFields, shape), shape, format) }
    case 'U': {
      const nv = fields(row.newRow!, row.newFields, shape)
      const ov = fields(row.oldRow!, row.oldFields, shape)
      const u = row.toastUnchanged
      if (shape.replicaIdentity === 'f') {
        return { tag: 'U', relationOid, old: tuple('O', ov, shape, format), new: tuple('N', nv, shape, format, false, u) }
      }
      // The old key is logged only when a key column changed.
      const keyChanged = shape.columns.some((c, i) => c.key && ov[i] !== nv[i])
      if (keyChanged) return { tag: 'U', relationOid, old: tuple('K', ov, shape, format, true), new: tuple('N', nv, shape, format, false, u) }
      return { tag: 'U', relationOid, new: tuple('N', nv, shape, format, false, u) }
    }
    case 'D': {
      if (!hasIdentity(shape)) return null
      const ov = fields(row.oldRow!, row.oldFields, shape)
      if (shape.replicaIdentity === 'f') return { tag: 'D', relationOid, old: tuple('O', ov, shape, format) }
      return { tag: 'D', relationOid, old: tuple('K', ov, shape, format, true) }
    }
    default:
      return null
  }
}

/** One TRUNCATE statement's message: flags 1 CASCADE, 2 RESTART IDENTITY (pgoutput's TRUNCATE_CASCADE / TRUNCATE_RESTART_SEQS). */
export function truncateMessage(flags: number, relationOids: number[]): PgoutputMessage {
  return { tag: 'T', flags, relationOids }
}
