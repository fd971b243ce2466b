// `node:diagnostics_channel` for the tab: channels work (subscribers get
// what is published); nothing in the tab subscribes unless the host does.

type Listener = (message: unknown, name: string | symbol) => void

export class Channel {
  #subscribers = new Set<Listener>()
  constructor(readonly name: string | symbol) {}
  get hasSubscribers(): boolean {
    return this.#subscribers.size > 0
  }
  subscribe(fn: Listener): void {
    this.#subscribers.add(fn)
  }
  unsubscribe(fn: Listener): boolean {
    return this.#subscribers.delete(fn)
  }
  publish(message: unknown): void {
    for (const fn of this.#subscribers) fn(message, this.name)
  }
  bindStore(): void {}
  unbindStore(): boolean {
    return false
  }
  runStores<R, A extends unknown[]>(message: unknown, fn: (...args: A) => R, thisArg?: unknown, ...args: A): R {
    this.publish(message)
    return fn.apply(thisArg, args)
  }
}

const channels = new Map<string | symbol, Channel>()
export function channel(name: string | symbol): Channel {
  let c = channels.get(name)
  if (!c) channels.set(name, (c = new Channel(name)))
  return c
}
export const hasSubscribers = (name: string | symbol) => channel(name).hasSubscribers
export const subscribe = (name: string | symbol, fn: Listener) => channel(name).subscribe(fn)
export const unsubscribe = (name: string | symbol, fn: Listener) => channel(name).unsubscribe(fn)

/** Node's TracingChannel: start/end/asyncStart/asyncEnd/error around a call. */
export function tracingChannel(name: string) {
  const [start, end, asyncStart, asyncEnd, error] = ['start', 'end', 'asyncStart', 'asyncEnd', 'error'].map((e) => channel(`tracing:${name}:${e}`)) as Channel[]
  const tc = {
    start: start!,
    end: end!,
    asyncStart: asyncStart!,
    asyncEnd: asyncEnd!,
    error: error!,
    get hasSubscribers() {
      return [start, end, asyncStart, asyncEnd, error].some((c) => c!.hasSubscribers)
    },
    subscribe(handlers: Partial<Record<'start' | 'end' | 'asyncStart' | 'asyncEnd' | 'error', Listener>>) {
      for (const [k, fn] of Object.entries(handlers)) if (fn) tc[k as 'start'].subscribe(fn)
    },
    unsubscribe(handlers: Partial<Record<'start' | 'end' | 'asyncStart' | 'asyncEnd' | 'error', Listener>>) {
      for (const [k, fn] of Object.entries(handlers)) if (fn) tc[k as 'start'].unsubscribe(fn)
      return true
    },
    traceSync<R>(fn: (...args: unknown[]) => R, context: Record<string, unknown> = {}, thisArg?: unknown, ...args: unknown[]): R {
      start!.publish(context)
      try {
        return (context.result = fn.apply(thisArg, args)) as R
      } catch (e) {
        context.error = e
        error!.publish(context)
        throw e
      } finally {
        end!.publish(context)
      }
    },
    tracePromise<R>(fn: (...args: unknown[]) => Promise<R>, context: Record<string, unknown> = {}, thisArg?: unknown, ...args: unknown[]): Promise<R> {
      start!.publish(context)
      try {
        return fn.apply(thisArg, args).then(
          (r) => ((context.result = r), asyncStart!.publish(context), asyncEnd!.publish(context), r),
          (e) => {
            context.error = e
            error!.publish(context)
            asyncStart!.publish(context)
            asyncEnd!.publish(context)
            throw e
          },
        )
      } finally {
        end!.publish(context)
      }
    },
    traceCallback<R>(fn: (...args: unknown[]) => R, _position?: number, context: Record<string, unknown> = {}, thisArg?: unknown, ...args: unknown[]): R {
      return tc.traceSync(fn, context, thisArg, ...args)
    },
  }
  return tc
}

export default { channel, hasSubscribers, subscribe, unsubscribe, tracingChannel, Channel }
