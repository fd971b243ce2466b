// `node:timers` for the tab: setImmediate on a MessageChannel (tasks.ts),
// the rest as the browser has them.

import { nextTask } from './tasks'

export interface Immediate {
  cancelled: boolean
  ref(): Immediate
  unref(): Immediate
  hasRef(): boolean
  [Symbol.dispose](): void
}

export function setImmediate<A extends unknown[]>(fn: (...args: A) => void, ...args: A): Immediate {
  const handle: Immediate = {
    cancelled: false,
    ref: () => handle,
    unref: () => handle,
    hasRef: () => true,
    [Symbol.dispose]: () => void (handle.cancelled = true),
  }
  nextTask(() => {
    if (!handle.cancelled) fn(...args)
  })
  return handle
}

export function clearImmediate(handle: Immediate | undefined): void {
  if (handle) handle.cancelled = true
}

// Bound: the platform's timers throw "Illegal invocation" when called on another object.
const native = { setTimeout: globalThis.setTimeout.bind(globalThis), clearTimeout: globalThis.clearTimeout.bind(globalThis), setInterval: globalThis.setInterval.bind(globalThis), clearInterval: globalThis.clearInterval.bind(globalThis) }

/**
 * Node's timer handle: Node code calls `.unref()`, `.refresh()` on what
 * setTimeout returns, where a browser returns a number. Converts to its id,
 * so the browser's own clearTimeout also accepts it.
 */
export class Timeout {
  #id: number
  constructor(
    private readonly fn: () => void,
    private readonly ms: number,
    private readonly repeat: boolean,
  ) {
    this.#id = this.#start()
  }
  #start(): number {
    // The platform returns an id (the types here are Node's, whose handle is an object).
    return (this.repeat ? native.setInterval(this.fn, this.ms) : native.setTimeout(this.fn, this.ms)) as unknown as number
  }
  ref(): this {
    return this
  }
  unref(): this {
    return this
  }
  hasRef(): boolean {
    return true
  }
  refresh(): this {
    this.close()
    this.#id = this.#start()
    return this
  }
  close(): this {
    if (this.repeat) native.clearInterval(this.#id)
    else native.clearTimeout(this.#id)
    return this
  }
  [Symbol.toPrimitive](): number {
    return this.#id
  }
  [Symbol.dispose](): void {
    this.close()
  }
}

export function setTimeout<A extends unknown[]>(fn: (...args: A) => void, ms = 0, ...args: A): Timeout {
  return new Timeout(() => fn(...args), ms, false)
}
export function setInterval<A extends unknown[]>(fn: (...args: A) => void, ms = 0, ...args: A): Timeout {
  return new Timeout(() => fn(...args), ms, true)
}
export function clearTimeout(t: Timeout | number | undefined | null): void {
  if (t instanceof Timeout) t.close()
  else if (t != null) native.clearTimeout(t)
}
export const clearInterval = clearTimeout
export default { setImmediate, clearImmediate, setTimeout, clearTimeout, setInterval, clearInterval }
