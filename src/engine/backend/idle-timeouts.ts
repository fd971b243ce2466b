// Timeouts that must never be set in PGlite's backend.
//
// PostgreSQL arms idle_in_transaction_session_timeout and idle_session_timeout
// when the backend goes idle waiting for the client's next message, and
// transaction_timeout when a transaction starts; when one fires, it ends the
// backend with FATAL. PGlite's backend is idle between any two calls into it,
// its timers are JavaScript timers (setitimer over setTimeout) that fire in
// those gaps, and its FATAL does not end anything: the next call spins
// forever, allocating (checked on 0.5.17: `SET
// idle_in_transaction_session_timeout = 100; BEGIN; SELECT 1`, wait, then any
// query never returns and the process runs out of memory). And one backend
// serves every session, so such a FATAL would be everyone's.
//
// So these are the session's alone: the wire session keeps their values and
// enforces them itself (25P03 and friends end that session only), and the
// backend always has them at 0. Statements that mention them are followed by
// a read of what the statement set (SHOW_TIMEOUTS_SQL) and a reset to 0
// before PGlite goes idle.

export const SESSION_ONLY_TIMEOUTS: readonly string[] = [
  'idle_in_transaction_session_timeout',
  'idle_session_timeout',
  'transaction_timeout',
]

export function isSessionOnly(name: string): boolean {
  return SESSION_ONLY_TIMEOUTS.includes(name.toLowerCase())
}

const NAMED = new RegExp(SESSION_ONLY_TIMEOUTS.join('|'), 'i')

/**
 * Cheap pre-check on a message's text: does it name one of them? (SET,
 * SET LOCAL, set_config, a function's SET clause all do; a name built at run
 * time by dynamic SQL does not, and is not guarded.)
 */
export function mayTouchSessionTimeouts(text: string): boolean {
  return NAMED.test(text)
}

/**
 * Reads the three in the backend: one result set each, in the order of
 * SESSION_ONLY_TIMEOUTS, each value as SHOW prints it. SHOW (and SET, below)
 * are utility statements: unlike a SELECT, they take no snapshot, so a
 * REPEATABLE READ transaction's snapshot stays where the client's first
 * query puts it.
 */
export const SHOW_TIMEOUTS_SQL = SESSION_ONLY_TIMEOUTS.map((n) => `SHOW ${n}`).join('; ')

/** Puts them back to 0 (a session-level SET: a later ROLLBACK returns to the value before the transaction, 0 too). */
export function resetSql(names: string[]): string {
  return names.map((n) => `SET ${n} = 0`).join('; ')
}

const SETS = new RegExp(
  String.raw`\bset\s+(?:local\s+|session\s+)?(${SESSION_ONLY_TIMEOUTS.join('|')})\b|\bset_config\s*\(\s*'(${SESSION_ONLY_TIMEOUTS.join('|')})'`,
  'i',
)

/**
 * The timeout a statement sets, for callers with no wire session to keep it
 * (the worker API): they refuse the statement before it runs, since there is
 * no connection for the timeout to end and PGlite's backend must not have it.
 */
export function setsSessionTimeout(text: string): string | null {
  const m = SETS.exec(text)
  return m ? (m[1] ?? m[2]).toLowerCase() : null
}
