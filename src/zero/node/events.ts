// `node:events` for the tab: the `events` package (Node's EventEmitter as a
// library), with the statics it lacks that zero-cache's dependencies use.

import Events from 'events'

type Emitter = InstanceType<typeof Events>
export const EventEmitter = Events as unknown as typeof import('node:events').EventEmitter & { prototype: Emitter }
export const once = (Events as unknown as { once: typeof import('node:events').once }).once
export const errorMonitor = Symbol('events.errorMonitor')
export const captureRejectionSymbol = Symbol.for('nodejs.rejection')
export const defaultMaxListeners = 10

export function setMaxListeners(n: number, ...targets: { setMaxListeners?: (n: number) => void }[]): void {
  for (const t of targets) t.setMaxListeners?.(n)
}

export function getEventListeners(target: { listeners?: (e: string | symbol) => unknown[] }, name: string | symbol): unknown[] {
  return target.listeners?.(name) ?? []
}

export function addAbortListener(signal: AbortSignal, listener: () => void): Disposable {
  if (signal.aborted) queueMicrotask(listener)
  else signal.addEventListener('abort', listener, { once: true })
  return { [Symbol.dispose]: () => signal.removeEventListener('abort', listener) } as Disposable
}

/** Node's `events.on`: an async iterator of the emitter's events of one name. */
export function on(emitter: Emitter, event: string, options: { signal?: AbortSignal } = {}): AsyncIterableIterator<unknown[]> {
  const queued: unknown[][] = []
  const waiting: { resolve: (r: IteratorResult<unknown[]>) => void; reject: (e: unknown) => void }[] = []
  let error: unknown
  let done = false
  const onEvent = (...args: unknown[]) => {
    const w = waiting.shift()
    if (w) w.resolve({ value: args, done: false })
    else queued.push(args)
  }
  const onError = (e: unknown) => {
    done = true
    const w = waiting.shift()
    if (w) w.reject(e)
    else error = e
    stop()
  }
  const stop = () => {
    emitter.off(event, onEvent)
    if (event !== 'error') emitter.off('error', onError)
    for (const w of waiting.splice(0)) w.resolve({ value: undefined, done: true })
  }
  emitter.on(event, onEvent)
  if (event !== 'error') emitter.on('error', onError)
  options.signal?.addEventListener('abort', () => onError(options.signal!.reason), { once: true })
  return {
    [Symbol.asyncIterator]() {
      return this
    },
    next() {
      const v = queued.shift()
      if (v) return Promise.resolve({ value: v, done: false })
      if (error !== undefined) {
        const e = error
        error = undefined
        return Promise.reject(e)
      }
      if (done) return Promise.resolve({ value: undefined, done: true })
      return new Promise((resolve, reject) => waiting.push({ resolve, reject }))
    },
    return() {
      done = true
      stop()
      return Promise.resolve({ value: undefined, done: true })
    },
  }
}

Object.assign(EventEmitter, { EventEmitter, once, on, errorMonitor, captureRejectionSymbol, setMaxListeners, getEventListeners, addAbortListener })
export default EventEmitter
