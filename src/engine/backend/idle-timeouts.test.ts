import { describe, expect, it } from 'vitest'
import { isSessionOnly, mayTouchSessionTimeouts, resetSql, setsSessionTimeout, SHOW_TIMEOUTS_SQL } from './idle-timeouts'

describe('session-only timeouts', () => {
  it('names the three timeouts that end a connection, in any case', () => {
    expect(isSessionOnly('IDLE_SESSION_TIMEOUT')).toBe(true)
    expect(isSessionOnly('idle_in_transaction_session_timeout')).toBe(true)
    expect(isSessionOnly('transaction_timeout')).toBe(true)
    expect(isSessionOnly('statement_timeout')).toBe(false)
    expect(isSessionOnly('lock_timeout')).toBe(false)
  })

  it('pre-checks messages that name one', () => {
    expect(mayTouchSessionTimeouts(`select set_config('idle_session_timeout', '1', false)`)).toBe(true)
    expect(mayTouchSessionTimeouts('SET LOCAL Transaction_Timeout = 5')).toBe(true)
    expect(mayTouchSessionTimeouts('SET statement_timeout = 5')).toBe(false)
    expect(mayTouchSessionTimeouts('SELECT timeout FROM jobs')).toBe(false)
  })

  it('finds the one a statement sets, not one it only reads', () => {
    expect(setsSessionTimeout('SET idle_session_timeout = 100')).toBe('idle_session_timeout')
    expect(setsSessionTimeout('begin; set local IDLE_IN_TRANSACTION_SESSION_TIMEOUT to 5')).toBe('idle_in_transaction_session_timeout')
    expect(setsSessionTimeout('SET SESSION transaction_timeout = 1')).toBe('transaction_timeout')
    expect(setsSessionTimeout(`SELECT set_config( 'transaction_timeout', '1s', true)`)).toBe('transaction_timeout')
    expect(setsSessionTimeout(`SELECT current_setting('idle_session_timeout')`)).toBeNull()
    expect(setsSessionTimeout(`SHOW idle_session_timeout`)).toBeNull()
    expect(setsSessionTimeout(`SET lock_timeout = 1`)).toBeNull()
  })

  it('reads with SHOW and resets with SET: utility statements that take no snapshot', () => {
    expect(SHOW_TIMEOUTS_SQL).toBe('SHOW idle_in_transaction_session_timeout; SHOW idle_session_timeout; SHOW transaction_timeout')
    expect(resetSql(['idle_session_timeout', 'transaction_timeout'])).toBe('SET idle_session_timeout = 0; SET transaction_timeout = 0')
  })
})
