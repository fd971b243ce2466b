// `node:worker_threads` for zero-cache in one thread. zero-cache's replicator
// hands its SQLite writes to a worker thread (write-worker.js). In the tab
// every connection to the replica must live in the one SQLite instance, whose
// VFS shares the wal-index between connections (src/zero/sqlite/vfs.c); a
// second thread would hold a second instance and a wal-index of its own. So
// `new Worker(url)` here runs the module on this thread, behind a pair of
// ports that deliver structured clones on a later task, as postMessage does.
//
// Each Worker imports its module under a URL of its own (a `#thread=N`
// fragment would be ignored, so a query), so each runs its top level once
// with its own `parentPort`, as in a thread.

import { nextTask } from './tasks'

type Listener = (value: unknown) => void

class Port {
  #listeners = new Map<string, Set<{ fn: Listener; once: boolean }>>()
  /** @internal */ peer?: Port
  #closed = false
  /**
   * Messages that arrived before anyone listened: a port starts delivering
   * when its first 'message' listener is attached, as Node's do. A worker's
   * module attaches its listener when it has loaded, and its parent may post
   * before that.
   */
  #unheard: unknown[] = []

  on(event: string, fn: Listener): this {
    return this.#add(event, fn, false)
  }

  once(event: string, fn: Listener): this {
    return this.#add(event, fn, true)
  }

  #add(event: string, fn: Listener, once: boolean): this {
    let set = this.#listeners.get(event)
    if (!set) this.#listeners.set(event, (set = new Set()))
    set.add({ fn, once })
    if (event === 'message' && this.#unheard.length) {
      const held = this.#unheard.splice(0)
      nextTask(() => {
        for (const m of held) if (!this.#closed) this.#receive(m)
      })
    }
    return this
  }

  /** @internal A message from the peer: to the listeners, or held until there are some. */
  #receive(message: unknown): void {
    if (!this.emit('message', message)) this.#unheard.push(message)
  }

  off(event: string, fn: Listener): this {
    for (const l of this.#listeners.get(event) ?? []) if (l.fn === fn) this.#listeners.get(event)!.delete(l)
    return this
  }

  removeListener(event: string, fn: Listener): this {
    return this.off(event, fn)
  }

  removeAllListeners(event?: string): this {
    if (event === undefined) this.#listeners.clear()
    else this.#listeners.delete(event)
    return this
  }

  /** @internal */ emit(event: string, value?: unknown): boolean {
    const set = this.#listeners.get(event)
    if (!set || set.size === 0) return false
    for (const l of [...set]) {
      if (l.once) set.delete(l)
      l.fn(value)
    }
    return true
  }

  postMessage(message: unknown): void {
    if (this.#closed) return
    const copy = structuredClone(message)
    const peer = this.peer!
    // A later task, as between threads: never inside the sender's call.
    nextTask(() => {
      if (!peer.#closed) peer.#receive(copy)
    })
  }

  /** @internal */ close(): void {
    this.#closed = true
  }

  // A port on this thread keeps nothing alive by itself.
  ref(): this {
    return this
  }

  unref(): this {
    return this
  }
}

/** The running worker's side: set while its module evaluates, per Worker. */
export let parentPort: Port | null = null
export const isMainThread = true
export const threadId = 0
export const workerData = undefined

let instances = 0

export class Worker extends Port {
  readonly threadId: number
  #inside: Port
  #exited = false

  constructor(url: URL | string, _options?: unknown) {
    super()
    this.threadId = ++instances
    this.#inside = new Port()
    this.#inside.peer = this
    this.peer = this.#inside
    const href = typeof url === 'string' ? url : url.href
    // (Not `?worker`: Vite, serving the bundle in tests, answers that query with a wrapper of its own.)
    const own = `${href}${href.includes('?') ? '&' : '?'}thread=${this.threadId}`
    const previous = parentPort
    parentPort = this.#inside
    // The module reads parentPort during its evaluation, which import() starts
    // synchronously for a module already loaded and later for one not yet: so
    // parentPort stays this worker's until its module has evaluated.
    import(/* @vite-ignore */ own).then(
      () => {
        if (parentPort === this.#inside) parentPort = previous
        this.emit('online')
      },
      (e: unknown) => {
        if (parentPort === this.#inside) parentPort = previous
        this.emit('error', e)
        this.#exit(1)
      },
    )
  }

  terminate(): Promise<number> {
    this.#exit(1)
    return Promise.resolve(1)
  }

  #exit(code: number): void {
    if (this.#exited) return
    this.#exited = true
    this.#inside.close()
    this.close()
    nextTask(() => this.emit('exit', code))
  }
}

export default { Worker, isMainThread, parentPort, threadId, workerData }
