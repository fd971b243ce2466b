// The engine's SQL lives in .sql files (src/engine/capture), compiled into
// one module of strings: the module is current, the names TypeScript and SQL
// share agree, and SQL numbers positions with positions.ts's formula.

import { PGlite } from '@electric-sql/pglite'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { CAPTURE_DIR, GENERATED, generate } from '../../scripts/sql-modules'
import { ADVISORY_BUSY, ADVISORY_FILE, COMMIT_CHANNEL, CONTROL_SQLSTATE, SESSIONS_FILE } from '../../src/engine/capture/names'
import { installChangeTracking } from '../../src/engine/install'
import { positionLsn } from '../../src/engine/replication/positions'
import { SLOTS_FILE } from '../../src/engine/replication/slot-store'
import { formatLsn } from '../../src/protocol/lsn'

const sql = (name: string) => readFileSync(join(CAPTURE_DIR, `${name}.sql`), 'utf8')

describe('capture SQL', () => {
  it('sql.generated.ts is what `npm run gen:sql` makes of the .sql files now', () => {
    expect(readFileSync(GENERATED, 'utf8')).toBe(generate())
  })

  it('spells out the values TypeScript names', () => {
    expect(sql('log')).toContain(`pg_notify('${COMMIT_CHANNEL}'`)
    expect(sql('slots')).toContain(`ERRCODE = '${CONTROL_SQLSTATE}'`)
    expect(sql('slots')).toContain(`pg_read_file('${SLOTS_FILE}'`)
    expect(sql('slots')).toContain(`pg_read_file('${SESSIONS_FILE}'`)
    expect(sql('slots')).toContain(`pg_read_file('${ADVISORY_FILE}'`)
    expect(sql('advisory')).toContain(`pg_read_file('${ADVISORY_FILE}'`)
    expect(sql('advisory')).toContain(`RAISE EXCEPTION '${ADVISORY_BUSY}'`)
  })

  it('pg_current_wal_lsn() is the position as the stream numbers it', async () => {
    const db = new PGlite()
    await installChangeTracking(db)
    await db.exec(`CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1), (2); INSERT INTO t VALUES (3)`)
    const { rows } = await db.query<{ p: string; lsn: string }>(`SELECT _tabgres.position()::text AS p, pg_current_wal_lsn()::text AS lsn`)
    expect(BigInt(rows[0].p)).toBe(3n)
    expect(rows[0].lsn).toBe(formatLsn(positionLsn(3n)))
    await db.close()
  })
})
