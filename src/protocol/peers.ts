// How tabs share one database (client/leadership.ts): the worker holding the
// data (the leader: it holds the Web Lock `tabgres:<name>`) is reached from
// every other tab through MessagePorts that a SharedWorker brokers
// (worker/broker.ts). Only ports pass through the broker; calls and frames
// then go straight between the follower's page and the leading worker.

import { PgError } from './errors'

/** Web Lock names. */
export const leaderLock = (name: string, leader: string) => `tabgres:${name}:leader:${leader}`
export const peerLock = (name: string, peer: string) => `tabgres:${name}:peer:${peer}`

/** A page to the broker, on its SharedWorker port. */
export type PageToBroker =
  /** Joins for `name` go to `port` (the leading worker's end) from now on; `leader` is its id. */
  | { type: 'lead'; name: string; leader: string; port: MessagePort }
  /**
   * Route `port` to the leader of `name` (when one leads that is not
   * `notLeader`, which the sender saw end: a tab that died cannot say so).
   * `holder`: a Web Lock the joining page holds while it lives.
   */
  | { type: 'join'; name: string; notLeader: string | null; holder: string; port: MessagePort }
  /** The leader `leader` of `name` is closing. */
  | { type: 'resign'; name: string; leader: string }

/** The broker to a leading worker, on the port from 'lead'. */
export interface JoinRequest {
  type: 'join'
  holder: string
  port: MessagePort
}

/** The broker to the joining page, on the joined port, before the leader's API answers there. */
export interface Routed {
  type: 'routed'
  leader: string
}

/** What a call on a closed Database fails with (08003, connection_does_not_exist). */
export function databaseClosed(name: string): PgError {
  return new PgError({ code: '08003', message: `database "${name}" is closed` })
}

/**
 * What a call in flight fails with when the tab holding the database goes
 * away: as when a PostgreSQL server's connection breaks (08006,
 * connection_failure), the call may or may not have taken effect; retrying
 * reaches the next leader.
 */
export function leaderLost(name: string): PgError {
  return new PgError({
    code: '08006',
    message: `the tab holding database "${name}" went away during the call`,
    detail: 'Another tab takes the database over; the call may or may not have taken effect.',
    hint: 'Retry it (a transaction from its start).',
  })
}

/**
 * What a call in flight fails with when its own page entered the
 * back/forward cache (or froze) and let the database go (08006, as a broken
 * connection): it may or may not have taken effect; retrying reaches the
 * next leader once the page runs again.
 */
export function pageSuspended(name: string): PgError {
  return new PgError({
    code: '08006',
    message: `this page let database "${name}" go while it was in the back/forward cache, during the call`,
    detail: 'A page that leaves for the back/forward cache hands the database over, as a closed tab does; the call may or may not have taken effect.',
    hint: 'Retry it (a transaction from its start).',
  })
}
