// Relation shapes and publication contents as of a change-log position.
// Both are versioned by the capture (capture/log.sql) so a reader that
// lags behind DDL still describes each change as it was written.

import type { Rows } from './exclusive'

export interface ColumnShape {
  name: string
  typeOid: number
  typeMod: number
  generated: boolean
  key: boolean
  typeNamespace: string
  typeName: string
  /** The type's send function (pg_type.typsend) and an array's element; absent in shapes recorded before binary output. */
  send?: string
  elemOid?: number | null
  elemSend?: string | null
}

export interface RelationShape {
  namespace: string
  name: string
  namespaceOid: number
  replicaIdentity: 'd' | 'n' | 'f' | 'i'
  columns: ColumnShape[]
}

export interface PublicationInfo {
  name: string
  allTables: boolean
  insert: boolean
  update: boolean
  delete: boolean
  truncate: boolean
  relids: number[]
  schemas: number[]
}

interface Version<T> {
  id: number
  validAfter: bigint
  value: T
}

/** Sorted version lists; `at(seq)` is the newest version written before seq. */
class History<T> {
  private list: Version<T>[] = []
  add(v: Version<T>): void {
    this.list.push(v)
    // Versions arrive in id order; valid_after never decreases, keep it sorted anyway.
    if (this.list.length > 1 && this.list[this.list.length - 2].validAfter > v.validAfter) {
      this.list.sort((a, b) => (a.validAfter < b.validAfter ? -1 : a.validAfter > b.validAfter ? 1 : a.id - b.id))
    }
  }
  at(seq: bigint): Version<T> | undefined {
    let found: Version<T> | undefined
    for (const v of this.list) {
      if (v.validAfter < seq) found = v
      else break
    }
    // Before the first recorded version, the first one is the best knowledge.
    return found ?? this.list[0]
  }
}

export class CatalogHistory {
  private relations = new Map<number, History<RelationShape | null>>()
  private publications = new History<PublicationInfo[]>()
  private lastRelationId = 0
  private lastPublicationId = 0

  /** SQL for the versions recorded since the last refresh: two result sets for apply(). */
  refreshSql(): string {
    return (
      `SELECT id, relid, valid_after, shape FROM _tabgres.relation_versions WHERE id > ${this.lastRelationId} ORDER BY id;` +
      `SELECT id, valid_after, publications FROM _tabgres.publication_versions WHERE id > ${this.lastPublicationId} ORDER BY id;`
    )
  }

  apply(rels: Rows, pubs: Rows): void {
    for (const [id, relid, validAfter, shape] of rels) {
      const rid = Number(relid)
      let h = this.relations.get(rid)
      if (!h) this.relations.set(rid, (h = new History()))
      h.add({ id: Number(id), validAfter: BigInt(validAfter!), value: shape ? (JSON.parse(shape) as RelationShape) : null })
      this.lastRelationId = Number(id)
    }
    for (const [id, validAfter, publications] of pubs) {
      this.publications.add({ id: Number(id), validAfter: BigInt(validAfter!), value: JSON.parse(publications!) })
      this.lastPublicationId = Number(id)
    }
  }

  relation(relid: number, seq: bigint): Version<RelationShape | null> | undefined {
    return this.relations.get(relid)?.at(seq)
  }

  publicationsAt(seq: bigint): Version<PublicationInfo[]> | undefined {
    return this.publications.at(seq)
  }
}

export type Action = 'insert' | 'update' | 'delete' | 'truncate'

/** pgoutput's filter: is this relation published for this action by any named publication? */
export function isPublished(
  pubs: PublicationInfo[],
  names: readonly string[] | null,
  relid: number,
  shape: RelationShape,
  action: Action,
): boolean {
  if (names === null) return true
  for (const p of pubs) {
    if (!names.includes(p.name) || !p[action]) continue
    if (p.allTables || p.relids.includes(relid) || p.schemas.includes(shape.namespaceOid)) return true
  }
  return false
}
