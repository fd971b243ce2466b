// One database, every tab: which worker a page's Database talks to.
//
// Each page that opens a database spawns a worker of its own, which asks for
// the name's Web Lock and waits (a candidate). The worker holding the lock is
// the leader: it opens the data and serves every tab. A page whose worker
// does not lead joins the leader through the broker (worker/broker.ts) and
// gets a MessagePort to it. Nothing tells a page when the leader's tab closes,
// reloads or crashes; the leader's own Web Lock does (protocol/peers.ts): each
// page waits on it, and once it is free, joins again. Meanwhile the browser
// has granted the name's lock to the next candidate worker in line, which
// opens the data and leads; when that is this page's own worker, the page
// talks to it directly.
//
// A call waits for a link (bounded: LINK_WAIT_MS); one in flight when its link
// is lost fails with 08006 (protocol/peers.ts, leaderLost).
//
// A page entering the back/forward cache (./lifecycle.ts) lets go of
// everything another page may wait for, as if its tab had closed: its worker
// ends (the data and its locks go to the next candidate) and its holder lock
// is released (a leader elsewhere ends this page's sessions). Its link is lost
// as in a takeover. Restored, it starts again as a new tab would: a new
// holder, a new candidate, a join; streams re-attach from what they received.

import * as Comlink from 'comlink'
import { PgError } from '../protocol/errors'
import { databaseClosed, leaderLock, leaderLost, pageSuspended, peerLock, type PageToBroker, type Routed } from '../protocol/peers'
import { holdLock, whenFree } from '../protocol/web-locks'
import type { WorkerApi } from '../worker/api'
import type { BootInfo, BootProgress, EngineOptions } from '../worker/engine'
import { onPageLifecycle } from './lifecycle'

/** The worker a Database talks to, until it is lost. */
export interface Link {
  readonly api: Comlink.Remote<WorkerApi>
  /** The leader's id (its Web Lock: protocol/peers.ts). */
  readonly leader: string
  /** This page's own worker leads. */
  readonly local: boolean
  readonly boot: BootInfo
  /** Resolves, with what calls in flight fail with, once the leader has gone. */
  readonly lost: Promise<PgError>
}

export type LinkEvent = { type: 'lost'; leader: string } | { type: 'linked'; leader: string; local: boolean; ms: number }

/** How long a call waits for a leader before failing with 08006. */
export const LINK_WAIT_MS = 30_000

export interface LeadershipOptions {
  engine: EngineOptions
  /** 'share' (default): join the leader when another tab leads, take over when it goes. */
  share: boolean
  spawn: () => Worker
  onProgress?: (p: BootProgress) => void
  onEvent?: (e: LinkEvent) => void
}

let broker: SharedWorker | null | undefined
/** The origin's broker, or null where there is no SharedWorker (then a tab waits for the data itself). */
function brokerPort(): MessagePort | null {
  if (broker === undefined) {
    broker =
      typeof SharedWorker === 'undefined' ? null : new SharedWorker(new URL('../worker/broker.ts', import.meta.url), { type: 'module', name: 'tabgres-broker' })
  }
  return broker?.port ?? null
}

export class Leadership {
  private now: Link | null = null
  private waiters: { resolve: (l: Link) => void; reject: (e: unknown) => void }[] = []
  private own: { worker: Worker; api: Comlink.Remote<WorkerApi> } | null = null
  /** Set once the own worker failed to open before any link existed (openDatabase's error). */
  private failure: unknown = null
  private readonly closed = new AbortController()
  /**
   * One run of this page: from start (or a return from the back/forward
   * cache) until close or suspension. Whatever a run started (watches,
   * joins, the candidate) ends with it.
   */
  private run = new AbortController()
  private releaseHolder: (() => void) | null = null
  private holderLock: string
  private lostAt = 0

  constructor(
    readonly name: string,
    private readonly opts: LeadershipOptions,
  ) {
    this.holderLock = peerLock(name, crypto.randomUUID())
  }

  /** Held by this page while the Database lives and runs: a leader ends this page's sessions once it is free. */
  get holder(): string {
    return this.holderLock
  }

  /** Starts the own worker's candidacy and, when sharing, joins whoever leads; resolves with the first link. */
  async start(): Promise<Link> {
    onPageLifecycle({ suspend: () => this.suspend(), resume: () => void this.resume() }, this.closed.signal)
    await this.begin()
    return this.link(Infinity)
  }

  private async begin(): Promise<void> {
    const run = this.run
    const release = await holdLock(this.holderLock)
    if (run.signal.aborted) return release() // suspended or closed meanwhile
    this.releaseHolder = release
    this.campaign()
    if (this.opts.share && brokerPort()) this.join(null)
  }

  /**
   * The page enters the back/forward cache or freezes: nothing of it may
   * hold what other pages wait for. Synchronous: the page stops once this returns.
   */
  private suspend(): void {
    if (this.closed.signal.aborted || this.run.signal.aborted) return
    if (this.now?.local) brokerPort()?.postMessage({ type: 'resign', name: this.name, leader: this.now.leader } satisfies PageToBroker)
    this.run.abort() // the link is lost (watch), joins stop
    // Ending the worker lets go of the name's lock (and its leader lock) at once; every write it acknowledged is durable.
    this.own?.worker.terminate()
    this.own = null
    this.releaseHolder?.()
    this.releaseHolder = null
  }

  /** Back from the back/forward cache: a new run, as a new tab's. */
  private async resume(): Promise<void> {
    if (this.closed.signal.aborted || !this.run.signal.aborted) return
    this.run = new AbortController()
    this.failure = null
    // A new holder: the old one's sessions were ended by the leader that saw it go.
    this.holderLock = peerLock(this.name, crypto.randomUUID())
    await this.begin()
  }

  /** The current link, or the next one (waiting at most `limit` ms). */
  link(limit = LINK_WAIT_MS): Promise<Link> {
    if (this.now) return Promise.resolve(this.now)
    if (this.failure) return Promise.reject(this.failure)
    if (this.closed.signal.aborted) return Promise.reject(databaseClosed(this.name))
    return new Promise((resolve, reject) => {
      const w = { resolve, reject }
      this.waiters.push(w)
      if (limit === Infinity) return
      setTimeout(() => {
        const i = this.waiters.indexOf(w)
        if (i < 0) return
        this.waiters.splice(i, 1)
        reject(
          new PgError({
            code: '08006',
            message: `no tab took database "${this.name}" over within ${limit} ms`,
            hint: 'Retry; the tab that is taking it over may still be opening it.',
          }),
        )
      }, limit)
    })
  }

  get current(): Link | null {
    return this.now
  }

  readonly movable = true

  /** This page's own worker holds the data now. */
  get leads(): boolean {
    return this.now?.local ?? false
  }

  /** Ends this page's own worker at once, as a crash would (tests: the leader's worker killed). */
  kill(): void {
    this.own?.worker.terminate()
  }

  /** Spawns this page's candidate worker: it waits for the name's lock, opens the data and leads. */
  private campaign(): void {
    const run = this.run
    const worker = this.opts.spawn()
    const api = Comlink.wrap<WorkerApi>(worker)
    const own = { worker, api }
    this.own = own
    const onLocked = this.opts.share ? 'wait' : (this.opts.engine.onLocked ?? 'fail')
    const progress = this.opts.onProgress ? Comlink.proxy(this.opts.onProgress) : undefined
    void (async () => {
      const boot = await api.open(this.name, { ...this.opts.engine, onLocked }, progress)
      const { port1, port2 } = new MessageChannel()
      const leader = await api.lead(Comlink.transfer(port2, [port2]))
      if (run.signal.aborted || this.own !== own) return
      const lead: PageToBroker = { type: 'lead', name: this.name, leader, port: port1 }
      brokerPort()?.postMessage(lead, [port1])
      this.adopt({ api, leader, local: true, boot, lost: this.watch(leader) })
    })().catch((e) => {
      if (this.own !== own || run.signal.aborted) return
      // Before any link, the open fails as it did (a bad template, 55006 with onLocked 'fail').
      if (!this.now) {
        this.failure = e
        for (const w of this.waiters.splice(0)) w.reject(e)
      }
    })
  }

  /** Asks the broker for a port to the leader (one that is not `notLeader`, seen to end). */
  private join(notLeader: string | null): void {
    const broker = brokerPort()
    const run = this.run
    if (!broker || run.signal.aborted) return
    const { port1, port2 } = new MessageChannel()
    const onRouted = (ev: MessageEvent<Routed>) => {
      if (ev.data?.type !== 'routed') return
      port1.removeEventListener('message', onRouted)
      void this.joined(port1, ev.data.leader, run.signal)
    }
    port1.addEventListener('message', onRouted)
    port1.start()
    const join: PageToBroker = { type: 'join', name: this.name, notLeader, holder: this.holder, port: port2 }
    broker.postMessage(join, [port2])
  }

  private async joined(port: MessagePort, leader: string, run: AbortSignal): Promise<void> {
    const api = Comlink.wrap<WorkerApi>(port)
    // This page's own worker leads (it won while the join waited): talk to it directly, and end the view made for the join.
    const unneeded = () => {
      void api.close().catch(() => {}).finally(() => (api[Comlink.releaseProxy](), port.close()))
    }
    if (this.now?.local || run.aborted) return unneeded()
    const lost = this.watch(leader)
    const boot = await Promise.race([api.hello(), lost.then(() => null)]).catch(() => null)
    if (!boot) {
      port.close()
      return this.join(leader) // it went before answering (or this run ended: join does nothing then)
    }
    if (this.now?.local || run.aborted) return unneeded()
    this.adopt({ api, leader, local: false, boot, lost })
  }

  /**
   * Resolves once the leader's Web Lock is free (it has closed, or its tab or
   * worker has gone), or this run ends by a suspension; never once this Database has closed.
   */
  private watch(leader: string): Promise<PgError> {
    const run = this.run.signal
    return new Promise((lost) => {
      whenFree(leaderLock(this.name, leader), () => lost(leaderLost(this.name)), { mode: 'shared', signal: run })
      run.addEventListener('abort', () => void (this.closed.signal.aborted || lost(pageSuspended(this.name))), { once: true })
    })
  }

  private adopt(link: Link): void {
    this.failure = null
    this.now = link
    this.opts.onEvent?.({ type: 'linked', leader: link.leader, local: link.local, ms: this.lostAt ? performance.now() - this.lostAt : 0 })
    this.lostAt = 0
    for (const w of this.waiters.splice(0)) w.resolve(link)
    void link.lost.then((e) => this.onLost(link, e))
  }

  private onLost(link: Link, error: PgError): void {
    if (this.closed.signal.aborted) return
    if (this.now === link) {
      this.now = null
      this.lostAt = performance.now()
      this.opts.onEvent?.({ type: 'lost', leader: link.leader })
    }
    // Suspended: the page starts again from nothing when it comes back (resume).
    if (this.run.signal.aborted) return
    if (link.local) {
      // This page's worker led and has gone (killed, or its data closed under it): a new candidate.
      this.own?.worker.terminate()
      this.own = null
      if (this.opts.share) this.campaign()
    }
    if (!this.opts.share) {
      this.failure = error // not sharing: no other tab's worker takes over
      return
    }
    // Not released: a transaction still holding this link must hear 08006 from it
    // (onLink), not that its proxy was released; its port is dead and Comlink lets go on GC.
    this.join(link.leader)
  }

  /** Ends the candidacy and lets go of the holder lock; the caller has closed its API. */
  close(): void {
    this.closed.abort()
    this.run.abort()
    // Joins no longer go to this page's worker (the others learn it from its lock).
    if (this.now?.local) brokerPort()?.postMessage({ type: 'resign', name: this.name, leader: this.now.leader } satisfies PageToBroker)
    this.now = null
    const closed = databaseClosed(this.name)
    for (const w of this.waiters.splice(0)) w.reject(closed)
    this.own?.worker.terminate()
    this.own = null
    this.releaseHolder?.()
    this.releaseHolder = null
  }
}
