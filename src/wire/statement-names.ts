// Per-session names for prepared statements and portals.
//
// Every wire session shares PGlite's one backend, where prepared statement
// and portal names are global: two clients that both prepare "s1" (as
// postgres.js and node-postgres do) would collide. The session prefixes the
// names in Parse, Bind, Describe, Close and Execute so each client has its own
// namespace; the unnamed statement and portal stay unnamed (a session holds
// the database from its first message to its ReadyForQuery, so nothing else
// runs between its Parse and its Sync). Spec: "Message Formats".

import { ByteReader, ByteWriter } from '../protocol/bytes'
import { close, SYNC } from '../protocol/frontend'

export class StatementNames {
  /** Named statements this session created (to close them when it ends). */
  readonly statements = new Set<string>()

  constructor(private readonly prefix: string) {}

  private name(n: string): string {
    return n === '' ? '' : this.prefix + n
  }

  /** The message with its statement/portal names rewritten (or the same bytes). */
  rewrite(tag: string, body: Uint8Array): Uint8Array | null {
    const r = new ByteReader(body)
    const w = new ByteWriter(body.length + 32)
    switch (tag) {
      case 'P': {
        const stmt = r.cstring()
        if (stmt !== '') this.statements.add(stmt)
        w.char('P').int32(0).cstring(this.name(stmt))
        break
      }
      case 'B': {
        const portal = r.cstring()
        const stmt = r.cstring()
        w.char('B').int32(0).cstring(this.name(portal)).cstring(this.name(stmt))
        break
      }
      case 'D':
      case 'C': {
        const what = r.char()
        const name = r.cstring()
        if (tag === 'C' && what === 'S') this.statements.delete(name)
        w.char(tag).int32(0).char(what).cstring(this.name(name))
        break
      }
      case 'E': {
        const portal = r.cstring()
        w.char('E').int32(0).cstring(this.name(portal))
        break
      }
      default:
        return null
    }
    w.bytes(body.subarray(r.offset))
    w.patchInt32(1, w.length - 1)
    return w.toBytes()
  }

  /** Close messages for every named statement left, with a Sync. */
  closeAll(): Uint8Array[] {
    const out: Uint8Array[] = []
    for (const s of this.statements) out.push(close('S', this.name(s)))
    this.statements.clear()
    if (out.length) out.push(SYNC)
    return out
  }
}
