import { describe, expect, it } from 'vitest'
import { mayChangeSettings } from './transaction-statements'

describe('mayChangeSettings', () => {
  it.each([
    'SET search_path = x',
    '  set local work_mem = 1',
    'RESET ALL',
    'DISCARD ALL',
    'SELECT 1; SET TimeZone = UTC',
    `SELECT set_config('search_path', '', false)`,
    'SELECT pg_catalog.SET_CONFIG ($1, $2, false)',
    `DO $$ BEGIN SET search_path = x; END $$`,
    `DO $$ BEGIN IF true THEN RESET search_path; END IF; END $$`,
    `DO $$ BEGIN EXECUTE 'SET search_path = x'; END $$`,
    `DO $$BEGIN EXECUTE format('SET %I = 1', 'work_mem'); END$$`,
    '/* why */ SET x.y = 1',
  ])('%s: yes', (sql) => expect(mayChangeSettings(sql)).toBe(true))

  it.each([
    'UPDATE accounts SET note = $1 WHERE id = $2',
    'INSERT INTO t VALUES (1) ON CONFLICT (id) DO UPDATE SET v = excluded.v',
    'ALTER TABLE t ALTER COLUMN c SET DEFAULT 1',
    'ALTER TABLE t SET SCHEMA s',
    'SELECT * FROM settings',
    `CREATE FUNCTION f() RETURNS int LANGUAGE sql SET search_path = public AS 'SELECT 1'`,
    'SELECT offset_settings FROM t',
  ])('%s: no', (sql) => expect(mayChangeSettings(sql)).toBe(false))
})
