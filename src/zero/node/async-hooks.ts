// `node:async_hooks` for the tab. A browser has no async context
// propagation: AsyncLocalStorage here keeps its store for the synchronous
// extent of `run` only. fastify and OpenTelemetry use it for request-scoped
// context that zero-cache does not read back across an await.

export class AsyncLocalStorage<T> {
  #store: T | undefined
  #enabled = true
  getStore(): T | undefined {
    return this.#enabled ? this.#store : undefined
  }
  run<R, A extends unknown[]>(store: T, fn: (...args: A) => R, ...args: A): R {
    const prev = this.#store
    this.#store = store
    try {
      return fn(...args)
    } finally {
      this.#store = prev
    }
  }
  exit<R, A extends unknown[]>(fn: (...args: A) => R, ...args: A): R {
    const prev = this.#store
    this.#store = undefined
    try {
      return fn(...args)
    } finally {
      this.#store = prev
    }
  }
  enterWith(store: T): void {
    this.#store = store
  }
  disable(): void {
    this.#enabled = false
    this.#store = undefined
  }
  static bind<F extends (...args: never[]) => unknown>(fn: F): F {
    return fn
  }
  static snapshot(): <R, A extends unknown[]>(fn: (...args: A) => R, ...args: A) => R {
    return (fn, ...args) => fn(...args)
  }
}

export class AsyncResource {
  constructor(readonly type: string) {}
  runInAsyncScope<R, A extends unknown[]>(fn: (...args: A) => R, thisArg?: unknown, ...args: A): R {
    return fn.apply(thisArg, args)
  }
  bind<F extends (...args: never[]) => unknown>(fn: F): F {
    return fn
  }
  static bind<F extends (...args: never[]) => unknown>(fn: F): F {
    return fn
  }
  emitDestroy(): this {
    return this
  }
  asyncId(): number {
    return 0
  }
  triggerAsyncId(): number {
    return 0
  }
}

export function createHook(): { enable(): unknown; disable(): unknown } {
  const hook = { enable: () => hook, disable: () => hook }
  return hook
}
export const executionAsyncId = () => 0
export const triggerAsyncId = () => 0
export const executionAsyncResource = () => ({})
export default { AsyncLocalStorage, AsyncResource, createHook, executionAsyncId, triggerAsyncId, executionAsyncResource }
