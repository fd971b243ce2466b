// The SharedWorker every tab of an origin connects to, so that tabs can reach
// the worker holding a database (protocol/peers.ts). It brokers MessagePorts
// and nothing else: no query or frame passes through it, and it keeps no data,
// so it can be replaced by any tab's without loss. A SharedWorker rather than
// a BroadcastChannel because a BroadcastChannel cannot carry a MessagePort,
// and calls and frames must go straight, transferred, between a tab and the
// leading worker.
//
// It learns nothing when a leader's tab dies (a port says nothing then); the
// joining page does, from the leader's Web Lock, and joins again naming the
// dead leader, which this forgets.

/// <reference lib="webworker" />
import type { JoinRequest, PageToBroker, Routed } from '../protocol/peers'

declare const self: SharedWorkerGlobalScope

interface Leader {
  id: string
  port: MessagePort
}

type Join = Extract<PageToBroker, { type: 'join' }>

function route(leader: Leader, join: Join): void {
  // Posted on the joiner's port, so it reaches the joining page first, which
  // learns whose Web Lock to watch before the leader's API answers.
  const routed: Routed = { type: 'routed', leader: leader.id }
  join.port.postMessage(routed)
  const request: JoinRequest = { type: 'join', holder: join.holder, port: join.port }
  leader.port.postMessage(request, [join.port])
}

/** The broker's state and its one handler (each page's messages, in order). */
export function createBroker(): (m: PageToBroker) => void {
  const leaders = new Map<string, Leader>()
  /** Joins waiting for a leader other than the one they saw end. */
  const waiting = new Map<string, Join[]>()
  const wait = (name: string, j: Join) => waiting.set(name, [...(waiting.get(name) ?? []), j])
  const forget = (name: string) => {
    leaders.get(name)?.port.close()
    leaders.delete(name)
  }

  return (m) => {
    if (m.type === 'lead') {
      forget(m.name)
      const leader = { id: m.leader, port: m.port }
      leaders.set(m.name, leader)
      const queued = waiting.get(m.name) ?? []
      waiting.delete(m.name)
      for (const j of queued) {
        if (j.notLeader === leader.id) wait(m.name, j)
        else route(leader, j)
      }
    } else if (m.type === 'join') {
      // The joiner saw this leader end: it is gone, whatever this broker last heard.
      if (leaders.get(m.name)?.id === m.notLeader) forget(m.name)
      const current = leaders.get(m.name)
      if (current) route(current, m)
      else wait(m.name, m)
    } else if (m.type === 'resign') {
      if (leaders.get(m.name)?.id === m.leader) forget(m.name)
    }
  }
}

// Only as the SharedWorker (a test imports createBroker alone).
if (typeof SharedWorkerGlobalScope !== 'undefined' && self instanceof SharedWorkerGlobalScope) {
  const onMessage = createBroker()
  self.onconnect = (ev: MessageEvent) => {
    const port = ev.ports[0]
    port.onmessage = (e: MessageEvent<PageToBroker>) => onMessage(e.data)
  }
}
