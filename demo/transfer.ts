// The header's Export and Import buttons: the playground's data out as a SQL
// dump that psql loads into a real PostgreSQL (db.dump()), and a dump (ours,
// or pg_dump's plain format from a server) back in (openDatabase's `from`).
//
// An Import never loads into the database on screen: it makes a database of
// its own (./databases.ts) and opens the page on it, so the data the page had
// stays as it was, one link away.

import { openDatabase, type Database } from '../src/client'
import { importDb, playgroundUrl } from './databases'
import { byId } from './dom'

/** What the page that an Import opens says about it (sessionStorage: this tab only). */
const IMPORTED_KEY = 'tabgres-demo:imported'

export interface Imported {
  name: string
  file: string
  outcome: 'loaded' | 'already-loaded'
  from: string
}

/** The Export button: the database as a .sql file for psql on a real PostgreSQL. */
export function enableExport(db: Database, onError: (e: unknown) => void): void {
  const button = byId<HTMLButtonElement>('export')
  button.disabled = false
  button.onclick = async () => {
    button.disabled = true
    button.textContent = 'Exporting…'
    try {
      const url = URL.createObjectURL(new Blob([await db.dump()], { type: 'application/sql' }))
      const a = document.createElement('a')
      a.href = url
      a.download = `${db.name}-${new Date().toISOString().slice(0, 19).replace(/[T:]/g, '-')}.sql`
      a.click()
      // The download has its own reference once started.
      setTimeout(() => URL.revokeObjectURL(url), 60_000)
    } catch (e) {
      onError(e)
    } finally {
      button.disabled = false
      button.textContent = 'Export SQL'
    }
  }
}

/**
 * The Import button: a file chooser; the dump is loaded (in one transaction:
 * a dump that fails leaves nothing, and its error shows with its SQLSTATE)
 * into the database named after its content, then the page opens on it.
 */
export function enableImport(current: Database, onError: (e: unknown) => void): void {
  const button = byId<HTMLButtonElement>('import')
  const input = byId<HTMLInputElement>('import-file')
  button.disabled = false
  button.onclick = () => input.click()
  input.onchange = async () => {
    const file = input.files?.[0]
    input.value = '' // choosing the same file again is a new choice
    if (!file) return
    button.disabled = true
    button.textContent = 'Importing…'
    try {
      const name = await importDb(file)
      const target = name === current.name ? current : await openDatabase(name, { from: file })
      const imported: Imported = { name, file: file.name, outcome: target === current ? 'already-loaded' : target.seeded!, from: current.name }
      if (target !== current) await target.close()
      sessionStorage.setItem(IMPORTED_KEY, JSON.stringify(imported))
      location.assign(playgroundUrl(name))
    } catch (e) {
      onError(e)
      button.disabled = false
      button.textContent = 'Import SQL'
    }
  }
}

/** What an Import that opened this page did, once (the next reload does not repeat it). */
export function takeImported(name: string): Imported | null {
  const raw = sessionStorage.getItem(IMPORTED_KEY)
  sessionStorage.removeItem(IMPORTED_KEY)
  const imported = raw ? (JSON.parse(raw) as Imported) : null
  return imported?.name === name ? imported : null
}
