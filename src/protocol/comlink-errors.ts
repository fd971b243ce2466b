// Errors across the worker boundary. Comlink's default 'throw' handler keeps
// only name, message and stack, so a SQLSTATE would be lost; this handler
// carries every PostgreSQL error field and rebuilds a PgError on the page.
// Both sides must install it (the worker before expose, the page before wrap).

import * as Comlink from 'comlink'
import { PgError, toPgError, type PgErrorFields } from './errors'

type Serialized = { pg: PgErrorFields; stack?: string } | { value: unknown }

const handler: Comlink.TransferHandler<unknown, Serialized> = {
  // Comlink wraps a thrown value as { value, [Symbol("Comlink.thrown")]: 0 }.
  canHandle: (value): value is unknown =>
    typeof value === 'object' &&
    value !== null &&
    Object.getOwnPropertySymbols(value).some((s) => s.description === 'Comlink.thrown'),
  serialize(thrown) {
    const value = (thrown as { value: unknown }).value
    const err = toPgError(value)
    return [{ pg: err.toFields(), stack: value instanceof Error ? value.stack : undefined }, []]
  },
  deserialize(s) {
    if ('pg' in s) {
      const err = new PgError(s.pg)
      if (s.stack) err.stack = s.stack
      throw err
    }
    throw s.value
  },
}

export function installErrorTransfer(): void {
  Comlink.transferHandlers.set('throw', handler as Comlink.TransferHandler<unknown, unknown>)
}
