// The tabs' broker (broker.ts) on its own: which leader a join reaches, and
// that a join naming a leader it saw end waits for the next one, whatever the
// broker last heard (a dead tab's port says nothing).

import { describe, expect, it } from 'vitest'
import type { JoinRequest, PageToBroker, Routed } from '../protocol/peers'
import { createBroker } from './broker'

/** A leader's registration: the broker's end, and the worker's end that receives joins. */
function leader(id: string) {
  const { port1, port2 } = new MessageChannel()
  const joins: JoinRequest[] = []
  let wake = () => {}
  port2.onmessage = (ev: MessageEvent<JoinRequest>) => {
    joins.push(ev.data)
    wake()
  }
  const lead: PageToBroker = { type: 'lead', name: 'db', leader: id, port: port1 }
  const received = async (n: number) => {
    while (joins.length < n) await new Promise<void>((r) => (wake = r))
    return joins
  }
  return { lead, received, close: () => port2.close() }
}

/** A join: the page's end hears which leader it was routed to. */
function join(notLeader: string | null) {
  const { port1, port2 } = new MessageChannel()
  const routed = new Promise<string>((resolve) => (port1.onmessage = (ev: MessageEvent<Routed>) => resolve(ev.data.leader)))
  const message: PageToBroker = { type: 'join', name: 'db', notLeader, holder: 'tabgres:db:peer:x', port: port2 }
  return { message, routed, close: () => port1.close() }
}

describe('the tabs broker', () => {
  it('routes a join to the current leader, and queues one made before any leads', async () => {
    const broker = createBroker()
    const early = join(null)
    broker(early.message)
    const a = leader('a')
    broker(a.lead)
    expect(await early.routed).toBe('a')
    const later = join(null)
    broker(later.message)
    expect(await later.routed).toBe('a')
    expect((await a.received(2)).map((j) => j.holder)).toEqual(['tabgres:db:peer:x', 'tabgres:db:peer:x'])
    for (const x of [a, early, later]) x.close()
  })

  it('a join naming the leader it saw end waits for the next leader, not that one', async () => {
    const broker = createBroker()
    const a = leader('a')
    broker(a.lead)
    const rejoin = join('a')
    broker(rejoin.message)
    // A page that has not seen 'a' end: the rejoin made the broker forget 'a', so it waits too.
    const unaware = join(null)
    broker(unaware.message)
    const b = leader('b')
    broker(b.lead)
    expect(await rejoin.routed).toBe('b')
    expect(await unaware.routed).toBe('b')
    // A registration arriving late from the dead leader's page is not used for a join that saw it end.
    const stale = join('b')
    broker(stale.message)
    const late = leader('b')
    broker(late.lead)
    const c = leader('c')
    broker(c.lead)
    expect(await stale.routed).toBe('c')
    for (const x of [a, b, late, c, rejoin, unaware, stale]) x.close()
  })

  it('a leader that resigns gets no more joins', async () => {
    const broker = createBroker()
    const a = leader('a')
    broker(a.lead)
    broker({ type: 'resign', name: 'db', leader: 'a' })
    const j = join(null)
    broker(j.message)
    const b = leader('b')
    broker(b.lead)
    expect(await j.routed).toBe('b')
    for (const x of [a, b, j]) x.close()
  })
})
