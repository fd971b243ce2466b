// `node:timers/promises` for the tab.

import { nextTask } from './tasks'

export function setTimeout<T = void>(ms = 0, value?: T, options: { signal?: AbortSignal } = {}): Promise<T> {
  return new Promise((resolve, reject) => {
    const signal = options.signal
    if (signal?.aborted) return reject(signal.reason)
    const id = globalThis.setTimeout(() => resolve(value as T), ms)
    signal?.addEventListener('abort', () => (globalThis.clearTimeout(id), reject(signal.reason)), { once: true })
  })
}
export function setImmediate<T = void>(value?: T): Promise<T> {
  return new Promise((resolve) => nextTask(() => resolve(value as T)))
}
export const scheduler = { wait: (ms: number) => setTimeout(ms), yield: () => setImmediate() }
export default { setTimeout, setImmediate, scheduler }
