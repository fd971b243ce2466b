// Publications a stream names: checked when it starts (if the backend is
// free) or at its first read, as PostgreSQL's pgoutput checks them.

import { PgError, SqlState } from '../../protocol/errors'
import { literal, type IdleSession } from './exclusive'

export function noSuchPublication(name: string): PgError {
  return new PgError({ code: SqlState.undefinedObject, message: `publication "${name}" does not exist` })
}

/** The first of `names` that is not a publication, or null. */
export async function missingPublication(s: IdleSession, names: string[]): Promise<string | null> {
  const rows = await s.query(
    `SELECT p FROM unnest(ARRAY[${names.map(literal).join(',')}]::text[]) p WHERE p NOT IN (SELECT pubname FROM pg_publication)`,
  )
  return rows.length ? rows[0][0] : null
}
