// Replication command parser: a real tokenizer for the walsender grammar
// (PostgreSQL docs, "Streaming Replication Protocol"; repl_gram.y / repl_scanner.l).
// Names and option values are data, never SQL: nothing here builds a query.

import { PgError, SqlState } from '../../protocol/errors'
import { parseLsn, type Lsn } from '../../protocol/lsn'

type Token =
  | { kind: 'word'; text: string; upper: string; pos: number } // unquoted identifier or keyword
  | { kind: 'ident'; text: string; pos: number } // "quoted identifier"
  | { kind: 'string'; text: string; pos: number } // 'string literal'
  | { kind: 'number'; text: string; pos: number }
  | { kind: 'lsn'; lsn: Lsn; text: string; pos: number }
  | { kind: 'punct'; text: '(' | ')' | ',' | ';'; pos: number }

/** NAMEDATALEN - 1: the longest identifier in bytes. */
const MAX_IDENTIFIER_BYTES = 63

/**
 * PostgreSQL's truncate_identifier: the replication scanner cuts every
 * identifier, quoted or not, to 63 bytes on a character boundary, so
 * `CREATE_REPLICATION_SLOT <70 letters>` creates the 63-letter slot.
 * (PostgreSQL also sends a NOTICE 42622 about it; tabgres does not.)
 */
export function truncateIdentifier(s: string): string {
  let bytes = 0
  let end = 0
  for (const ch of s) {
    const cp = ch.codePointAt(0)!
    const n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4
    if (bytes + n > MAX_IDENTIFIER_BYTES) return s.slice(0, end)
    bytes += n
    end += ch.length
  }
  return s
}

/** PostgreSQL's downcase_identifier in a UTF-8 database folds ASCII A-Z only. */
export function foldIdentifier(s: string): string {
  return s.replace(/[A-Z]+/g, (m) => m.toLowerCase())
}

function syntaxError(message: string, pos?: number): PgError {
  return new PgError({ code: SqlState.syntaxError, message, position: pos === undefined ? undefined : String(pos + 1) })
}

export function tokenize(input: string): Token[] {
  const out: Token[] = []
  let i = 0
  while (i < input.length) {
    const c = input[i]
    if (/\s/.test(c)) {
      i++
    } else if (c === '-' && input[i + 1] === '-') {
      while (i < input.length && input[i] !== '\n') i++
    } else if (c === '"' || c === "'") {
      const start = i
      let text = ''
      i++
      for (;;) {
        if (i >= input.length) {
          throw syntaxError(c === '"' ? 'unterminated quoted identifier' : 'unterminated quoted string', start)
        }
        if (input[i] === c) {
          if (input[i + 1] === c) {
            text += c
            i += 2
            continue
          }
          i++
          break
        }
        text += input[i++]
      }
      if (c === '"' && text === '') throw syntaxError('zero-length delimited identifier', start)
      out.push(c === '"' ? { kind: 'ident', text, pos: start } : { kind: 'string', text, pos: start })
    } else if (c === '(' || c === ')' || c === ',' || c === ';') {
      out.push({ kind: 'punct', text: c, pos: i++ })
    } else if (/[0-9A-Fa-f]/.test(c)) {
      const m = /^[0-9A-Fa-f]{1,8}\/[0-9A-Fa-f]{1,8}/.exec(input.slice(i))
      if (m) {
        out.push({ kind: 'lsn', lsn: parseLsn(m[0])!, text: m[0], pos: i })
        i += m[0].length
        continue
      }
      const w = /^[A-Za-z_\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*/.exec(input.slice(i))
      if (w) {
        out.push({ kind: 'word', text: foldIdentifier(w[0]), upper: w[0].toUpperCase(), pos: i })
        i += w[0].length
        continue
      }
      const n = /^[0-9]+/.exec(input.slice(i))!
      out.push({ kind: 'number', text: n[0], pos: i })
      i += n[0].length
    } else if (/[A-Za-z_\u0080-\uffff]/.test(c)) {
      const w = /^[A-Za-z_\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*/.exec(input.slice(i))!
      out.push({ kind: 'word', text: foldIdentifier(w[0]), upper: w[0].toUpperCase(), pos: i })
      i += w[0].length
    } else {
      throw syntaxError(`syntax error at or near "${c}"`, i)
    }
  }
  return out
}

export type SnapshotAction = 'export' | 'nothing' | 'use'

export type ReplicationCommand =
  | { kind: 'IDENTIFY_SYSTEM' }
  | { kind: 'SHOW'; name: string }
  | { kind: 'CREATE_REPLICATION_SLOT'; slot: string; temporary: boolean; physical: boolean; plugin: string; snapshot: SnapshotAction }
  | { kind: 'DROP_REPLICATION_SLOT'; slot: string; wait: boolean }
  | { kind: 'START_REPLICATION'; slot: string | null; physical: boolean; startLsn: Lsn; options: Map<string, string | null> }
  | { kind: 'READ_REPLICATION_SLOT'; slot: string }
  | { kind: 'TIMELINE_HISTORY' }
  | { kind: 'BASE_BACKUP' }

const COMMAND_WORDS = new Set([
  'IDENTIFY_SYSTEM',
  'SHOW',
  'CREATE_REPLICATION_SLOT',
  'DROP_REPLICATION_SLOT',
  'START_REPLICATION',
  'READ_REPLICATION_SLOT',
  'TIMELINE_HISTORY',
  'BASE_BACKUP',
])

/** True when the text is a walsender command rather than SQL. */
export function isReplicationCommand(input: string): boolean {
  const m = /^\s*([A-Za-z_]+)/.exec(input)
  return !!m && COMMAND_WORDS.has(m[1].toUpperCase())
}

class Parser {
  private i = 0
  constructor(
    private readonly toks: Token[],
    private readonly input: string,
  ) {}

  private peek(): Token | undefined {
    return this.toks[this.i]
  }

  private next(): Token {
    const t = this.toks[this.i]
    if (!t) throw syntaxError('syntax error at end of input', this.input.length)
    this.i++
    return t
  }

  private unexpected(t: Token | undefined): PgError {
    if (!t) return syntaxError('syntax error at end of input', this.input.length)
    return syntaxError(`syntax error at or near "${'text' in t ? t.text : ''}"`, t.pos)
  }

  keyword(...words: string[]): string | null {
    const t = this.peek()
    if (t?.kind === 'word' && words.includes(t.upper)) {
      this.i++
      return t.upper
    }
    return null
  }

  expectKeyword(word: string): void {
    if (!this.keyword(word)) throw this.unexpected(this.peek())
  }

  /** An identifier: unquoted (folded to lower case) or "quoted" (kept exactly). */
  identifier(): string {
    const t = this.next()
    if (t.kind === 'word' || t.kind === 'ident') return truncateIdentifier(t.text)
    throw this.unexpected(t)
  }

  punct(p: string): boolean {
    const t = this.peek()
    if (t?.kind === 'punct' && t.text === p) {
      this.i++
      return true
    }
    return false
  }

  end(): void {
    this.punct(';')
    const t = this.peek()
    if (t) throw this.unexpected(t)
  }

  /** `( name [value] [, ...] )` with string, number, identifier or absent values. */
  options(): Map<string, string | null> {
    const opts = new Map<string, string | null>()
    if (!this.punct('(')) return opts
    if (this.punct(')')) return opts
    for (;;) {
      const name = this.identifier()
      let value: string | null = null
      const t = this.peek()
      if (t && (t.kind === 'string' || t.kind === 'number' || t.kind === 'ident' || (t.kind === 'word'))) {
        this.i++
        value = t.text
      }
      if (opts.has(name)) {
        throw new PgError({ code: SqlState.syntaxError, message: `conflicting or redundant options`, position: String((t?.pos ?? 0) + 1) })
      }
      opts.set(name, value)
      if (this.punct(',')) continue
      if (this.punct(')')) break
      throw this.unexpected(this.peek())
    }
    return opts
  }

  number(): string {
    const t = this.next()
    if (t.kind === 'number') return t.text
    throw this.unexpected(t)
  }

  lsn(): Lsn {
    const t = this.next()
    if (t.kind === 'lsn') return t.lsn
    throw this.unexpected(t)
  }
}

export function parseReplicationCommand(input: string): ReplicationCommand {
  const p = new Parser(tokenize(input), input)
  const cmd = p.keyword(...COMMAND_WORDS)
  if (!cmd) throw syntaxError('syntax error', 0)
  switch (cmd) {
    case 'IDENTIFY_SYSTEM':
      p.end()
      return { kind: cmd }
    case 'SHOW': {
      const name = p.identifier()
      p.end()
      return { kind: cmd, name }
    }
    case 'CREATE_REPLICATION_SLOT': {
      const slot = p.identifier()
      const temporary = p.keyword('TEMPORARY') !== null
      const type = p.keyword('LOGICAL', 'PHYSICAL')
      if (!type) throw syntaxError('syntax error: expected LOGICAL or PHYSICAL')
      let plugin = ''
      if (type === 'LOGICAL') plugin = p.identifier()
      let snapshot: SnapshotAction = 'export'
      const legacy = p.keyword('EXPORT_SNAPSHOT', 'NOEXPORT_SNAPSHOT', 'USE_SNAPSHOT', 'RESERVE_WAL', 'TWO_PHASE')
      if (legacy === 'NOEXPORT_SNAPSHOT') snapshot = 'nothing'
      else if (legacy === 'USE_SNAPSHOT') snapshot = 'use'
      else if (legacy === 'TWO_PHASE') throwUnsupported('two-phase replication slots are not supported')
      else if (legacy === null) {
        for (const [k, v] of p.options()) {
          if (k === 'snapshot') {
            if (v === 'export' || v === 'nothing' || v === 'use') snapshot = v
            else throw new PgError({ code: SqlState.invalidParameterValue, message: `unrecognized value for CREATE_REPLICATION_SLOT option "snapshot": "${v}"` })
          } else if (k === 'two_phase' || k === 'failover') {
            // A boolean option without a value means true (defGetBoolean).
            if (v === null || !['false', 'off', '0', 'no', 'f', 'n'].includes(v.toLowerCase())) {
              throwUnsupported(`replication slot option "${k}" is not supported`)
            }
          } else if (k === 'reserve_wal') {
            // meaningful only for physical slots; accepted
          } else {
            throw new PgError({ code: SqlState.syntaxError, message: `unrecognized option: ${k}` })
          }
        }
      }
      p.end()
      return { kind: cmd, slot, temporary, physical: type === 'PHYSICAL', plugin, snapshot }
    }
    case 'DROP_REPLICATION_SLOT': {
      const slot = p.identifier()
      const wait = p.keyword('WAIT') !== null
      p.end()
      return { kind: cmd, slot, wait }
    }
    case 'START_REPLICATION': {
      let slot: string | null = null
      if (p.keyword('SLOT')) slot = p.identifier()
      const physical = p.keyword('LOGICAL') === null
      if (physical) p.keyword('PHYSICAL')
      const startLsn = p.lsn()
      let options = new Map<string, string | null>()
      // TIMELINE takes an unsigned integer (repl_gram.y: K_TIMELINE UCONST).
      if (physical && p.keyword('TIMELINE')) p.number()
      else options = p.options()
      p.end()
      return { kind: cmd, slot, physical, startLsn, options }
    }
    case 'READ_REPLICATION_SLOT': {
      const slot = p.identifier()
      p.end()
      return { kind: cmd, slot }
    }
    default:
      return { kind: cmd as 'TIMELINE_HISTORY' | 'BASE_BACKUP' }
  }
}

function throwUnsupported(message: string): never {
  throw new PgError({ code: SqlState.featureNotSupported, message })
}
