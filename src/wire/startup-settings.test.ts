import { describe, expect, it } from 'vitest'
import { PgError } from '../protocol/errors'
import { startupSettings } from './server-session'

describe('startupSettings: what a start-up packet sets, in the order PostgreSQL applies it', () => {
  it("reads the options parameter's switches first, then the other parameters, which win", () => {
    expect(
      startupSettings({
        user: 'u', database: 'd', replication: 'database', application_name: 'a', client_encoding: 'UTF8',
        options: '-c DateStyle=German,\\ DMY  -cTimeZone=Europe/Paris --extra-float-digits=3',
        TimeZone: 'UTC',
        '_pq_.future_option': 'x',
      }),
    ).toEqual([['DateStyle', 'German, DMY'], ['TimeZone', 'Europe/Paris'], ['extra_float_digits', '3'], ['TimeZone', 'UTC']])
  })

  it('a stray word or a -c without a value is 42601, as the server process refuses its arguments', () => {
    for (const options of ['-c DateStyle=German, DMY', '-c', '-c novalue', 'x']) {
      const e = (() => {
        try {
          startupSettings({ options })
        } catch (err) {
          return err
        }
      })()
      expect(e, options).toBeInstanceOf(PgError)
      expect((e as PgError).code).toBe('42601')
    }
  })
})
