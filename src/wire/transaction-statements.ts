// Transaction-control statements a session answers without the backend.
//
// Every session shares PGlite's one backend, and a session holds it from the
// first statement of a transaction block to its end. PostgreSQL clients open
// blocks early and hold them (postgres.js's begin(), zero-cache's transaction
// pools: BEGIN, SET LOCAL ..., SET TRANSACTION SNAPSHOT, then a keepalive
// every few seconds), so the session keeps BEGIN and the settings that
// follow it to itself until a statement needs data (wire/virtual-block.ts).
// This module only recognizes them: one statement, exactly these forms,
// anything else (several statements, parameters, other syntax) is ordinary
// SQL for the backend. Spec: PostgreSQL docs, "BEGIN", "START TRANSACTION",
// "SET", "SET TRANSACTION", "COMMIT", "ROLLBACK", "SAVEPOINT".

export type Isolation = 'serializable' | 'repeatable read' | 'read committed' | 'read uncommitted'

export interface TransactionModes {
  isolation: Isolation | null
  readOnly: boolean | null
  deferrable: boolean | null
}

export type TransactionStatement =
  | ({ kind: 'begin'; text: string } & TransactionModes)
  | { kind: 'commit' }
  | { kind: 'rollback' }
  /** SET LOCAL name = value (value null: DEFAULT). */
  | { kind: 'set-local'; name: string; value: string | null; text: string }
  | { kind: 'set-snapshot'; id: string }
  /** SET [SESSION] name = value (value null: DEFAULT), RESET name | ALL. */
  | { kind: 'set-session'; name: string; value: string | null }
  | { kind: 'reset'; name: string }
  | { kind: 'savepoint'; name: string }
  | { kind: 'release'; name: string }
  | { kind: 'rollback-to'; name: string }

const WS = String.raw`(?:\s|--[^\n]*(?:\n|$))+`
const OPT_WS = `(?:${WS})?`
const IDENT = String.raw`(?:[A-Za-z_][A-Za-z0-9_$]*|"(?:[^"]|"")+")`
const DOTTED = `${IDENT}(?:\\.${IDENT})?`
/** One SET value: a number, a word, or a string literal. */
const VALUE = String.raw`(?:[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[A-Za-z_][A-Za-z0-9_$]*|'(?:[^']|'')*')`
const END = `${OPT_WS};?${OPT_WS}$`

const MODE = String.raw`(?:isolation${WS}level${WS}(?:serializable|repeatable${WS}read|read${WS}committed|read${WS}uncommitted)|read${WS}write|read${WS}only|(?:not${WS})?deferrable)`
const BEGIN_RE = new RegExp(
  `^${OPT_WS}(?:begin(?:${WS}(?:work|transaction))?|start${WS}transaction)((?:${OPT_WS},?${OPT_WS}${MODE})*)${END}`,
  'i',
)
const COMMIT_RE = new RegExp(`^${OPT_WS}(?:commit|end)(?:${WS}(?:work|transaction))?${END}`, 'i')
const ROLLBACK_RE = new RegExp(`^${OPT_WS}(?:rollback|abort)(?:${WS}(?:work|transaction))?${END}`, 'i')
const SET_LOCAL_RE = new RegExp(`^${OPT_WS}set${WS}local${WS}(${DOTTED})${OPT_WS}(?:=|${WS}to${WS})${OPT_WS}(${VALUE})${END}`, 'i')
const SET_SESSION_RE = new RegExp(`^${OPT_WS}set${WS}(?:session${WS})?(${DOTTED})${OPT_WS}(?:=|${WS}to${WS})${OPT_WS}(${VALUE})${END}`, 'i')
const RESET_RE = new RegExp(`^${OPT_WS}reset${WS}(${DOTTED})${END}`, 'i')
const SET_SNAPSHOT_RE = new RegExp(`^${OPT_WS}set${WS}transaction${WS}snapshot${WS}('(?:[^']|'')*')${END}`, 'i')
const SAVEPOINT_RE = new RegExp(`^${OPT_WS}savepoint${WS}(${IDENT})${END}`, 'i')
const RELEASE_RE = new RegExp(`^${OPT_WS}release(?:${WS}savepoint)?${WS}(${IDENT})${END}`, 'i')
const ROLLBACK_TO_RE = new RegExp(`^${OPT_WS}(?:rollback|abort)(?:${WS}(?:work|transaction))?${WS}to(?:${WS}savepoint)?${WS}(${IDENT})${END}`, 'i')

function identifier(s: string): string {
  return s.startsWith('"') ? s.slice(1, -1).replace(/""/g, '"') : s.toLowerCase()
}

function dotted(s: string): string {
  return s
    .split('.')
    .map((p) => identifier(p))
    .join('.')
}

function unquote(s: string): string {
  return s.startsWith("'") ? s.slice(1, -1).replace(/''/g, "'") : s
}

function modes(text: string): TransactionModes {
  const t = text.toLowerCase().replace(/--[^\n]*/g, ' ').replace(/\s+/g, ' ')
  const iso = /isolation level (serializable|repeatable read|read committed|read uncommitted)/.exec(t)
  return {
    isolation: (iso?.[1] as Isolation | undefined) ?? null,
    readOnly: /read only/.test(t) ? true : /read write/.test(t) ? false : null,
    deferrable: /not deferrable/.test(t) ? false : /deferrable/.test(t) ? true : null,
  }
}

/** The statement, when `sql` is exactly one of the forms above; otherwise null. */
export function transactionStatement(sql: string): TransactionStatement | null {
  if (sql.length > 1000) return null
  let m: RegExpExecArray | null
  if ((m = BEGIN_RE.exec(sql))) return { kind: 'begin', text: sql.trim().replace(/;$/, ''), ...modes(m[1]) }
  if (COMMIT_RE.test(sql)) return { kind: 'commit' }
  if ((m = ROLLBACK_TO_RE.exec(sql))) return { kind: 'rollback-to', name: identifier(m[1]) }
  if (ROLLBACK_RE.test(sql)) return { kind: 'rollback' }
  if ((m = SET_LOCAL_RE.exec(sql))) {
    const name = dotted(m[1])
    const value = /^default$/i.test(m[2]) ? null : unquote(m[2])
    return { kind: 'set-local', name, value, text: sql.trim().replace(/;$/, '') }
  }
  if ((m = SET_SESSION_RE.exec(sql)) && !/^(local|session|transaction)$/i.test(m[1])) {
    return { kind: 'set-session', name: dotted(m[1]), value: /^default$/i.test(m[2]) ? null : unquote(m[2]) }
  }
  if ((m = RESET_RE.exec(sql)) && !/^session$/i.test(m[1])) return { kind: 'reset', name: dotted(m[1]) }
  if ((m = SET_SNAPSHOT_RE.exec(sql))) return { kind: 'set-snapshot', id: unquote(m[1]) }
  if ((m = SAVEPOINT_RE.exec(sql))) return { kind: 'savepoint', name: identifier(m[1]) }
  if ((m = RELEASE_RE.exec(sql))) return { kind: 'release', name: identifier(m[1]) }
  return null
}

/**
 * Could this text change session settings in the backend? A SET, RESET or
 * DISCARD command where a statement starts (the text's start, after `;`, in a
 * plpgsql body after BEGIN/THEN/ELSE/LOOP, in a string run by EXECUTE), or a
 * set_config() call. Not `UPDATE t SET ...` or `ALTER ... SET DEFAULT`: a
 * session that only wrote would otherwise save and reset every setting after
 * each statement. A function's own SET clause changes nothing once it
 * returns. (Settings changed by SQL assembled at run time go unnoticed.)
 */
export function mayChangeSettings(text: string): boolean {
  return SETTINGS_CHANGE.test(text)
}

const SETTINGS_CHANGE = /(?:^|[;('"]|\*\/|\$\$|\b(?:begin|then|else|loop|execute)\b)\s*(?:set|reset|discard)\b|\bset_config\s*\(/i
