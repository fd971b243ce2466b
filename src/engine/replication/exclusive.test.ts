import { PGlite } from '@electric-sql/pglite'
import { expect, it } from 'vitest'
import { installChangeTracking } from '../install'
import { run } from './exclusive'
import { pruneNow, stopPruning } from './prune'

it("the engine's own queries stop with 57P01 once PGlite has closed, instead of entering it", async () => {
  const db = new PGlite()
  await expect(run(db, 'SELECT 1', false)).resolves.toMatchObject({ status: 'I' })
  await db.close()
  await expect(run(db, 'SELECT 1', false)).rejects.toMatchObject({ code: '57P01' })
})

it('stopPruning waits for a running prune and no prune starts after it', async () => {
  const db = new PGlite()
  await installChangeTracking(db, { retention: 'discard' })
  await db.exec('CREATE TABLE t (v text); INSERT INTO t VALUES (1)')
  const running = pruneNow(db)
  await stopPruning(db)
  await expect(running).resolves.toBeTruthy() // it finished before stopPruning resolved
  expect(pruneNow(db)).toBeNull() // stopped: nothing is scheduled any more
  await db.close()
})
