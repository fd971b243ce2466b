// A replication connection's own output settings apply to the values it
// receives, as PostgreSQL's walsender prints them: pg_recvlogical connects
// with options '-c DateStyle=... -c TimeZone=...' and gets each value as
// PostgreSQL's output function prints it under those settings (PGlite itself
// is the oracle, under the same settings).

import { PGlite } from '@electric-sql/pglite'
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { installChangeTracking } from '../../src/engine/install'
import { parseRecord } from '../../src/engine/replication/record'
import { listen, type TcpServer } from '../../src/node/server'
import { splitRecvlogicalFile } from '../support/recvlogical'

const run = promisify(execFile)
const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin'

const COLUMNS = `id int PRIMARY KEY, d date, ts timestamp, tz timestamptz, iv interval, f4 float4, f8 float8, b bytea,
                 tza timestamptz[], r tstzrange, t time, tt timetz, txt text`
const ROW = `(1, '2024-02-29', '2024-01-02 03:04:05.123456', '2024-07-01 12:00:00+00', '-1 years -2 mons +3 days -04:05:06.5',
              0.1, 0.30000000000000004, '\\x00ff5c27', '{"2024-01-01 00:00:00+00","1999-12-31 23:59:59+00"}',
              '[2024-01-01 00:00:00+00,2024-06-01 00:00:00+00)', '23:59:59.999999', '12:00:00+05:30', 'text stays')`

describe('walsender session settings', () => {
  let db: PGlite
  let server: TcpServer
  let dir: string

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tabgres-settings-'))
    db = new PGlite()
    await installChangeTracking(db)
    await db.exec(`CREATE TABLE t (${COLUMNS}); CREATE PUBLICATION p FOR TABLE t`)
    server = await listen(db)
  })
  afterAll(async () => {
    await server?.close()
    await db?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  /** The inserted row's values as pg_recvlogical receives them with `settings` on its connection. */
  async function received(slot: string, settings: string): Promise<(string | null)[]> {
    const conn = `host=127.0.0.1 port=${server.port} dbname=postgres user=postgres options='${settings}'`
    await run(join(PG_BIN, 'pg_recvlogical'), ['-d', conn, `--slot=${slot}`, '--create-slot', '--plugin=pgoutput'])
    await db.exec(`DELETE FROM t; INSERT INTO t VALUES ${ROW}`)
    const [{ lsn }] = (await db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows
    const file = join(dir, `${slot}.bin`)
    await run(
      join(PG_BIN, 'pg_recvlogical'),
      ['-d', conn, `--slot=${slot}`, '--start', '-o', 'proto_version=1', '-o', 'publication_names=p', `--endpos=${lsn}`, '-f', file, '--no-loop'],
      { timeout: 60_000 },
    )
    const insert = splitRecvlogicalFile(new Uint8Array(readFileSync(file))).find((m) => m.tag === 'I')
    if (insert?.tag !== 'I') throw new Error('no Insert received')
    return insert.new.columns.map((c) => (c.kind === 't' ? c.value : null))
  }

  /** The row as PostgreSQL prints it under `settings` (SET LOCAL each). */
  async function printed(settings: Record<string, string>): Promise<(string | null)[]> {
    const sets = Object.entries(settings).map(([k, v]) => `SET LOCAL ${k} = '${v}';`).join(' ')
    const r = await db.transaction(async (tx) => {
      await tx.exec(sets)
      return (await tx.query<{ r: string }>(`SELECT ROW(x.*)::text AS r FROM t x`)).rows[0].r
    })
    return parseRecord(r)
  }

  it('DateStyle, IntervalStyle, TimeZone, extra_float_digits and bytea_output of the replication connection shape the values', async () => {
    const settings = { DateStyle: 'German, DMY', IntervalStyle: 'sql_standard', TimeZone: 'America/New_York', extra_float_digits: '0', bytea_output: 'escape' }
    // A space in a value is escaped for the server (\\ ) and that backslash again for libpq's quoted value.
    const got = await received('styled', Object.entries(settings).map(([k, v]) => `-c ${k}=${v.replace(/ /g, '\\\\ ')}`).join(' '))
    const want = await printed(settings)
    expect(got).toEqual(want)
    // The settings did change the values (the canonical print is different).
    expect(want).not.toEqual(await printed({}))
  })

  it('a connection in the canonical settings gets the change log text as it is', async () => {
    const got = await received('plain', '-c extra_float_digits=3')
    expect(got).toEqual(await printed({ DateStyle: 'ISO, MDY', TimeZone: 'UTC' }))
  })
})
