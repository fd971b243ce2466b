// pgoutput's START_REPLICATION options (PostgreSQL 15 pgoutput.c,
// parse_output_parameters), with PostgreSQL's error codes and messages.

import { PgError, SqlState } from '../../protocol/errors'
import { foldIdentifier } from './commands'

export interface StartOptions {
  protoVersion: number
  publications: string[] | null
  messages: boolean
  /** Values in each type's binary send format ('b' columns; protocol/type-send.ts). */
  binary: boolean
  /** 'off', 'on' (proto 2+) or 'parallel' (proto 4): large transactions go out as Stream Start/Stop/Commit. */
  streaming: 'off' | 'on' | 'parallel'
  /** Prepared transactions go out as Begin Prepare / Prepare / Commit Prepared (proto 3+). */
  twoPhase: boolean
}

/** The newest protocol version tabgres speaks (PostgreSQL 16's LOGICALREP_PROTO_MAX_VERSION_NUM). */
export const PROTO_VERSION = 4

function bool(name: string, v: string | null): boolean {
  if (v === null) return true
  const s = v.trim().toLowerCase()
  if (['true', 'on', 'yes', '1', 't', 'y'].includes(s)) return true
  if (['false', 'off', 'no', '0', 'f', 'n'].includes(s)) return false
  throw new PgError({ code: SqlState.invalidParameterValue, message: `${name} requires a Boolean value` })
}

/** Splits publication_names like SplitIdentifierString: commas, optional "quotes". */
export function splitIdentifiers(list: string): string[] {
  const out: string[] = []
  let i = 0
  // pgoutput raises this with ERRCODE_INVALID_NAME.
  const bad = () => new PgError({ code: '42602', message: 'invalid publication_names syntax' })
  // SplitIdentifierString accepts an empty (or all-blank) list.
  if (list.trim() === '') return out
  for (;;) {
    while (/\s/.test(list[i] ?? '')) i++
    let name = ''
    if (list[i] === '"') {
      i++
      for (;;) {
        if (i >= list.length) throw bad()
        if (list[i] === '"') {
          if (list[i + 1] === '"') {
            name += '"'
            i += 2
            continue
          }
          i++
          break
        }
        name += list[i++]
      }
    } else {
      const start = i
      while (i < list.length && list[i] !== ',' && !/\s/.test(list[i])) i++
      name = foldIdentifier(list.slice(start, i))
      if (!name) throw bad()
    }
    out.push(name)
    while (/\s/.test(list[i] ?? '')) i++
    if (i >= list.length) return out
    if (list[i] !== ',') throw bad()
    i++
  }
}

export function parseStartOptions(opts: Map<string, string | null>): StartOptions {
  let protoVersion: number | null = null
  let publications: string[] | null = null
  let messages = false
  let binary = false
  let streaming: 'off' | 'on' | 'parallel' = 'off'
  let twoPhase = false
  for (const [name, value] of opts) {
    switch (name) {
      case 'proto_version': {
        const n = value !== null && /^\s*\d+\s*$/.test(value) ? Number(value) : NaN
        if (!Number.isInteger(n) || n > 0x7fffffff) {
          throw new PgError({ code: SqlState.invalidParameterValue, message: `invalid proto_version` })
        }
        protoVersion = n
        break
      }
      case 'publication_names':
        if (value === null) throw new PgError({ code: '42602', message: 'invalid publication_names syntax' })
        publications = splitIdentifiers(value)
        break
      case 'messages':
        messages = bool(name, value)
        break
      case 'binary':
        binary = bool(name, value)
        break
      case 'streaming':
        // PostgreSQL 16 accepts 'parallel' besides a Boolean; the version
        // checks follow once proto_version is known (options come in any order).
        streaming = value !== null && value.trim().toLowerCase() === 'parallel' ? 'parallel' : bool(name, value) ? 'on' : 'off'
        break
      case 'two_phase':
        twoPhase = bool(name, value)
        break
      case 'origin':
        if (value === null || !['any', 'none'].includes(value.toLowerCase())) {
          throw new PgError({ code: SqlState.invalidParameterValue, message: `unrecognized origin value: "${value}"` })
        }
        if (value.toLowerCase() === 'none') {
          // Every change in tabgres is local (no replication origins), so 'none' filters nothing.
        }
        break
      default:
        throw new PgError({ code: SqlState.invalidParameterValue, message: `unrecognized pgoutput option: ${name}` })
    }
  }
  const v = protoVersion ?? 0
  if (v < 1) {
    throw new PgError({ code: SqlState.featureNotSupported, message: `client sent proto_version=${v} but we only support protocol 1 or higher` })
  }
  if (v > PROTO_VERSION) {
    throw new PgError({ code: SqlState.featureNotSupported, message: `client sent proto_version=${v} but we only support protocol ${PROTO_VERSION} or lower` })
  }
  if (streaming === 'parallel' && v < 4) {
    throw new PgError({ code: SqlState.featureNotSupported, message: `requested proto_version=${v} does not support parallel streaming, need 4 or higher` })
  }
  if (streaming === 'on' && v < 2) {
    throw new PgError({ code: SqlState.featureNotSupported, message: `requested proto_version=${v} does not support streaming, need 2 or higher` })
  }
  if (twoPhase && v < 3) {
    throw new PgError({ code: SqlState.featureNotSupported, message: `requested proto_version=${v} does not support two-phase commit, need 3 or higher` })
  }
  if (publications === null) {
    throw new PgError({ code: SqlState.invalidParameterValue, message: 'publication_names parameter missing' })
  }
  return { protoVersion: v, publications, messages, binary, streaming, twoPhase }
}
