// `node:assert` for the tab: the assertions its dependencies make.

import { isDeepStrictEqual, inspect } from './util'

export class AssertionError extends Error {
  readonly code = 'ERR_ASSERTION'
  constructor(options: { message?: string; actual?: unknown; expected?: unknown; operator?: string }) {
    super(options.message ?? `${inspect(options.actual)} ${options.operator ?? '=='} ${inspect(options.expected)}`)
    this.name = 'AssertionError'
  }
}

function fail(message: string | Error | undefined, actual: unknown, expected: unknown, operator: string): never {
  if (message instanceof Error) throw message
  throw new AssertionError({ message, actual, expected, operator })
}

function ok(value: unknown, message?: string | Error): asserts value {
  if (!value) fail(message ?? 'The expression evaluated to a falsy value', value, true, '==')
}

const assert = Object.assign(ok, {
  ok,
  AssertionError,
  fail: (message?: string | Error): never => fail(message ?? 'Failed', undefined, undefined, 'fail'),
  equal: (a: unknown, b: unknown, m?: string | Error) => void (a == b || fail(m, a, b, '==')),
  notEqual: (a: unknown, b: unknown, m?: string | Error) => void (a != b || fail(m, a, b, '!=')),
  strictEqual: (a: unknown, b: unknown, m?: string | Error) => void (Object.is(a, b) || fail(m, a, b, 'strictEqual')),
  notStrictEqual: (a: unknown, b: unknown, m?: string | Error) => void (!Object.is(a, b) || fail(m, a, b, 'notStrictEqual')),
  deepStrictEqual: (a: unknown, b: unknown, m?: string | Error) => void (isDeepStrictEqual(a, b) || fail(m, a, b, 'deepStrictEqual')),
  deepEqual: (a: unknown, b: unknown, m?: string | Error) => void (isDeepStrictEqual(a, b) || fail(m, a, b, 'deepEqual')),
  throws: (fn: () => unknown, _e?: unknown, m?: string | Error) => {
    try {
      fn()
    } catch {
      return
    }
    fail(m ?? 'Missing expected exception.', undefined, undefined, 'throws')
  },
})
Object.assign(assert, { strict: assert })

export default assert
export const { equal, notEqual, strictEqual, notStrictEqual, deepStrictEqual, deepEqual, throws } = assert
export { ok }
export const strict = assert
