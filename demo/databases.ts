// Which database this page is the playground of. The playground's own is
// tabgres-demo; an Import loads a dump into a database of its own and opens
// the page on it (?db=<name>), so importing never overwrites what is there.
// Everything a playground keeps beside its database (slot locks, zero-cache's
// databases and replica) is named after it.

export const DEFAULT_DB = 'tabgres-demo'

/** Names the page accepts in ?db=: what an Import makes, or any short lowercase name. */
const NAME = /^[a-z0-9][a-z0-9-]{0,62}$/

/** The database named by ?db= (the default without one); throws on a name the page would not make. */
export function playgroundDb(search: string = location.search): string {
  const name = new URLSearchParams(search).get('db')
  if (name === null || name === DEFAULT_DB) return DEFAULT_DB
  if (!NAME.test(name)) throw new Error(`?db=${name}: a playground database name is lowercase letters, digits and dashes (at most 63)`)
  return name
}

/** The page's address for database `name`. */
export function playgroundUrl(name: string): string {
  const url = new URL(location.href)
  if (name === DEFAULT_DB) url.searchParams.delete('db')
  else url.searchParams.set('db', name)
  return url.href
}

/**
 * The database an Import of `dump` goes to: named after its content, so
 * importing the same file again opens the database it made (already loaded)
 * rather than a copy, and a retry after a failed load reuses the empty one.
 */
export async function importDb(dump: Blob): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', await dump.arrayBuffer()))
  const hex = Array.from(digest.subarray(0, 4), (b) => b.toString(16).padStart(2, '0')).join('')
  return `${DEFAULT_DB}-import-${hex}`
}
