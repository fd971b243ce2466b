// A throwaway PostgreSQL 15 cluster on 127.0.0.1 (Debian's postgresql-15),
// the anchor that benches compare tabgres against in the same run.
// As root it runs as the OS user `postgres`, which the Debian package creates.

import { execFileSync, spawnSync } from 'node:child_process'
import { chownSync, mkdtempSync, rmSync, writeFileSync, appendFileSync } from 'node:fs'
import { tmpdir, userInfo } from 'node:os'
import { join } from 'node:path'

export const PG_BIN = process.env.PG_BIN ?? '/usr/lib/postgresql/15/bin'

export interface Pg15 {
  port: number
  url(database: string): string
  stop(): void
}

export function startPg15(port: number, databases: string[]): Pg15 {
  const scratch = mkdtempSync(join(tmpdir(), 'tabgres-pg15-'))
  const data = join(scratch, 'data')
  const root = userInfo().uid === 0
  if (root) {
    const id = execFileSync('id', ['-u', 'postgres']).toString().trim()
    chownSync(scratch, Number(id), Number(id))
  }
  const run = (bin: string, args: string[]) => {
    const cmd = root ? ['runuser', '-u', 'postgres', '--', join(PG_BIN, bin), ...args] : [join(PG_BIN, bin), ...args]
    const r = spawnSync(cmd[0], cmd.slice(1), { encoding: 'utf8' })
    if (r.status !== 0) throw new Error(`${bin} failed: ${r.stderr || r.stdout}`)
  }
  run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C.UTF-8'])
  appendFileSync(
    join(data, 'postgresql.conf'),
    `listen_addresses = '127.0.0.1'\nport = ${port}\nunix_socket_directories = '${scratch}'\nwal_level = logical\n` +
      `max_replication_slots = 10\nmax_wal_senders = 10\nTimeZone = 'UTC'\n`,
  )
  writeFileSync(join(data, 'pg_hba.conf'), 'local all all trust\nhost all all 127.0.0.1/32 trust\nhost replication all 127.0.0.1/32 trust\n')
  run('pg_ctl', ['-D', data, '-l', join(scratch, 'server.log'), '-w', 'start'])
  for (const db of databases) {
    if (db !== 'postgres') run('psql', ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-qc', `CREATE DATABASE "${db}"`])
  }
  return {
    port,
    url: (db) => `postgresql://postgres@127.0.0.1:${port}/${db}`,
    stop() {
      run('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop'])
      rmSync(scratch, { recursive: true, force: true })
    },
  }
}
