// The page's handle on a database. Every call goes to whichever worker leads
// it now (./leadership.ts: this tab's own, or another tab's over a port): a
// call waits for a leader, and one in flight when its leader goes fails with
// 08006 (retryable). Interactive transactions live on one leader and end
// with it. Streams re-attach to the next leader by themselves, from what
// they received (./stream.ts); wire sessions end as lost connections.

import * as Comlink from 'comlink'
import type { QueryOptions, Results } from '@electric-sql/pglite'
import { toPgError } from '../protocol/errors'
import { databaseClosed } from '../protocol/peers'
import { formatLsn, parseLsn, type Lsn } from '../protocol/lsn'
import type { PageToWorker, WorkerToPage } from '../protocol/stream-port'
import type { CommandResult, CreateSlotRequest, SeedOutcome, StartReplicationRequest, WorkerApi } from '../worker/api'
import type { BootInfo } from '../worker/engine'
import type { Link } from './leadership'
import { relayWire } from './relay'
import { storageState, type StorageState } from './storage'
import { ReplicationStream } from './stream'

export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>>
  exec(sql: string): Promise<Results[]>
}

export interface StartReplicationOptions {
  slot: string
  /** Where to start (the slot's confirmed position wins when greater); default 0/0. */
  startLsn?: Lsn | string
  /** pgoutput options: proto_version, publication_names, messages, binary, ... */
  options: Record<string, string>
  /** Flow-control window: bytes of frames the worker may send ahead of the consumer. */
  window?: number
}

/** Where a Database's calls go: ./leadership.ts, or one fixed API (the testing kit). */
export interface LinkSource {
  link(): Promise<Link>
  /** The link now, if there is one (none during a takeover). */
  readonly current: Link | null
  /** A Web Lock this page holds while the Database lives (a leader in another tab ends this page's sessions without it). */
  readonly holder: string | null
  /** This page's own worker leads (its calls go to no other tab). */
  readonly leads: boolean
  /** The data may change hands (./leadership.ts): wire sessions are relayed, to end them when it does. */
  readonly movable: boolean
  close(): void
  /** Ends this page's worker at once (killWorker). */
  kill(): void
}

/** One API that never changes hands (the testing kit's port, a worker given to openDatabase by a test). */
export function fixedLink(api: Comlink.Remote<WorkerApi>, boot: BootInfo, end: () => void): LinkSource {
  const link: Link = { api, boot, leader: 'fixed', local: true, lost: new Promise(() => {}) } // never lost
  return { link: async () => link, current: link, holder: null, leads: true, movable: false, close: end, kill: end }
}

/** A call that fails with the link's loss if the leader goes while it is in flight. */
function onLink<T>(link: Link, call: Promise<T>): Promise<T> {
  return Promise.race([call, link.lost.then((e) => Promise.reject(e))])
}

export class Database implements Queryable {
  private closing: Promise<void> | null = null
  private ended = false
  /** The streams this Database attached and may re-attach: the port it keeps to each (its control end). */
  private readonly streams = new Set<MessagePort>()

  constructor(
    readonly name: string,
    private readonly links: LinkSource,
    private lastBoot: BootInfo,
  ) {}

  /** How the data this Database reaches was opened (the boot of the leader it reached last). */
  get boot(): BootInfo {
    return this.lastBoot
  }

  /** True while this page's own worker holds the data. */
  get leads(): boolean {
    return this.links.leads
  }

  private async link(): Promise<Link> {
    if (this.ended) throw databaseClosed(this.name)
    const link = await this.links.link()
    this.lastBoot = link.boot
    return link
  }

  private async call<T>(fn: (api: Comlink.Remote<WorkerApi>) => Promise<T>): Promise<T> {
    const link = await this.link()
    return onLink(link, fn(link.api))
  }

  /** Resolves once the statement ran and, unless opened 'relaxed', is durable in IndexedDB. */
  async query<T = Record<string, unknown>>(sql: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>> {
    return this.call((api) => api.query(sql, params, options) as Promise<Results<T>>)
  }

  async exec(sql: string): Promise<Results[]> {
    return this.call((api) => api.exec(sql))
  }

  /**
   * An interactive transaction: fn's queries run in one transaction and no
   * other call interleaves. Commits when fn resolves (durably), rolls back
   * when it throws. It lives on one leader: if that leader goes, its calls
   * fail with 08006 and it rolled back.
   */
  async transaction<R>(fn: (tx: Queryable) => Promise<R>): Promise<R> {
    const link = await this.link()
    const id = await onLink(link, link.api.begin())
    const tx: Queryable = {
      query: <T>(sql: string, params?: unknown[], options?: QueryOptions) =>
        onLink(link, link.api.txQuery(id, sql, params, options) as Promise<Results<T>>),
      exec: (sql: string) => onLink(link, link.api.txExec(id, sql)),
    }
    let result: R
    try {
      result = await fn(tx)
    } catch (e) {
      await onLink(link, link.api.rollback(id)).catch(() => {})
      throw e
    }
    await onLink(link, link.api.commit(id))
    return result
  }

  async identifySystem(): Promise<CommandResult> {
    return this.call((api) => api.identifySystem())
  }

  async createSlot(name: string, options: CreateSlotRequest = {}): Promise<CommandResult> {
    return this.call((api) => api.createSlot(name, options))
  }

  async dropSlot(name: string, options: { wait?: boolean } = {}): Promise<void> {
    return this.call((api) => api.dropSlot(name, options.wait ?? false))
  }

  /** START_REPLICATION, read in this page. */
  async startReplication(opts: StartReplicationOptions): Promise<ReplicationStream> {
    return new ReplicationStream(await this.replicationPort(opts), opts.window)
  }

  /**
   * START_REPLICATION, but the stream's port is handed back unread: transfer
   * it to another worker (a replica, a sync engine) and read it there with
   * `new ReplicationStream(port, window)`. Frames go from the leading worker
   * to the consumer on a port of their own; this one carries the stream's
   * control, so that this Database can re-attach it to the next leader.
   */
  async replicationPort(opts: StartReplicationOptions): Promise<MessagePort> {
    const startLsn = typeof opts.startLsn === 'bigint' ? formatLsn(opts.startLsn) : opts.startLsn
    const req: StartReplicationRequest = { slot: opts.slot, startLsn, options: opts.options, window: opts.window }
    const { port1: consumer, port2: control } = new MessageChannel()
    try {
      await this.attach(control, req)
    } catch (e) {
      consumer.close()
      control.close()
      throw e
    }
    this.streams.add(control)
    control.onmessage = (ev: MessageEvent<PageToWorker>) => {
      const m = ev.data
      if (m.type === 'ended') {
        this.streams.delete(control)
        control.close()
      } else if (m.type === 'resume') {
        void this.reattach(control, req, m.lsn)
      }
    }
    return consumer
  }

  /** START_REPLICATION on the current leader; the frames' port goes to the consumer over `control`. */
  private async attach(control: MessagePort, req: StartReplicationRequest): Promise<void> {
    const link = await this.link()
    const { port1: frames, port2: remote } = new MessageChannel()
    try {
      await onLink(link, link.api.startReplication(Comlink.transfer(remote, [remote]), req))
    } catch (e) {
      frames.close()
      throw e
    }
    const attach: WorkerToPage = { type: 'attach', port: frames }
    control.postMessage(attach, [frames])
    // Once this leader goes, the consumer says where it got to ('resume').
    void link.lost.then(() => {
      if (this.streams.has(control)) control.postMessage({ type: 'detached' } satisfies WorkerToPage)
    })
  }

  /** The stream again, from the next leader, after the last transaction the consumer received whole. */
  private async reattach(control: MessagePort, req: StartReplicationRequest, received: string): Promise<void> {
    const from = parseLsn(received) ?? 0n
    const asked = parseLsn(req.startLsn ?? '0/0') ?? 0n
    const next = { ...req, startLsn: formatLsn(from > asked ? from : asked) }
    for (;;) {
      if (!this.streams.has(control)) return
      try {
        await this.attach(control, next)
        return
      } catch (e) {
        const err = toPgError(e)
        // That leader went too: the next one.
        if (err.code === '08006' && !this.ended) continue
        this.streams.delete(control)
        control.postMessage({ type: 'error', error: err.toFields() } satisfies WorkerToPage)
        control.close()
        return
      }
    }
  }

  /**
   * A PostgreSQL wire-protocol session (protocol 3.0) on a MessagePort: post
   * frontend bytes as ArrayBuffers, receive backend bytes; post null to
   * disconnect. Send `replication: 'database'` in the StartupMessage for a
   * replication session. Any PostgreSQL client library with a pluggable
   * stream can run over it. If the tab holding the data goes, the session
   * ends as a lost connection (null); connect again to reach the next one.
   *
   * `holder` names a Web Lock that whoever uses the port holds for as long
   * as it does (take it before calling connect). A port handed to another
   * worker says nothing when that worker ends, as a process's socket does
   * when it dies; the lock does: once it is free, the session ends as on a
   * lost connection (an open transaction rolls back, locks are released).
   */
  async connect(options: { password?: string; auth?: 'trust' | 'password' | 'md5' | 'scram-sha-256'; holder?: string } = {}): Promise<MessagePort> {
    const link = await this.link()
    const holder = options.holder ?? this.links.holder ?? undefined
    const { port1: session, port2: remote } = new MessageChannel()
    await onLink(link, link.api.connect(Comlink.transfer(remote, [remote]), { ...options, holder }))
    if (!this.links.movable) return session
    const { port1: client, port2: mine } = new MessageChannel()
    relayWire(mine, session, link.lost)
    return client
  }

  /**
   * The whole database as a plain SQL dump in pg_dump's format: schema, data,
   * sequence positions, keys, indexes, triggers and publications, for
   * `psql -v ON_ERROR_STOP=1 -f dump.sql` on PostgreSQL 15 or later. One
   * consistent snapshot, taken when no other session has a transaction open;
   * its header lists whatever it could not carry (row-level security, rules, ...).
   */
  async dump(): Promise<string> {
    return this.call((api) => api.dump())
  }

  /** What `from` did when this Database was opened with it: 'loaded', or 'already-loaded' (seeded before). */
  seeded?: SeedOutcome

  /** Loads a plain SQL dump into a database that has no tables yet (see OpenOptions.from). */
  async seed(script: string): Promise<SeedOutcome> {
    return this.call((api) => api.seed(script))
  }

  /**
   * Whether the browser will keep this origin's data, and how much it uses
   * of what it may (./storage.ts): the page's own view, the same in a tab
   * that leads and one that does not, and during a takeover.
   */
  storage(): Promise<StorageState> {
    return storageState()
  }

  /** Diagnostics from the leading worker. */
  async stats() {
    return this.call((api) => api.stats())
  }

  /**
   * Ends this Database: its streams stop, its sessions end, and this page's
   * worker ends. When it held the data, everything is made durable first and
   * another tab's worker takes over.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      try {
        // During a takeover there is nothing to close there: this page's part ended with the old leader.
        const link = this.links.current
        // The leader's close lets go of its lock before it answers: its loss is the close done.
        if (link?.local) await Promise.race([link.api.close(), link.lost])
        else if (link) await onLink(link, link.api.close()).catch(() => {}) // that leader went: nothing of this page's is left there
      } finally {
        this.ended = true
        for (const control of this.streams) control.close()
        this.streams.clear()
        this.links.close()
      }
    })()
    return this.closing
  }

  /** Ends this page's worker at once, as a crashed or closed tab would (tests). */
  terminate(): void {
    this.ended = true
    this.links.close()
  }

  /** Ends this page's worker at once and goes on, as after the worker crashed (tests): another takes over. */
  killWorker(): void {
    this.links.kill()
  }
}
