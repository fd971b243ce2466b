// The leading worker's side of a database shared by tabs (protocol/peers.ts):
// each tab that joins gets its own view of the engine (./api.ts, a view), on
// its own port, so that what it opened ends when it goes: its page holds a
// Web Lock while it lives, and once the lock is free (the tab closed,
// reloaded or crashed; its port says nothing) its transactions roll back and
// its streams and wire sessions end, as a dropped connection's do.

import * as Comlink from 'comlink'
import { leaderLock, type JoinRequest } from '../protocol/peers'
import { holdLock, whenFree } from '../protocol/web-locks'
import type { WorkerApi } from './api'

export interface Leading {
  /** This leader's id: its Web Lock (leaderLock) is held until resign(). */
  readonly id: string
  /** Ends every joined tab's view (at close, before the data closes). */
  closeViews(): Promise<void>
  /** Lets go of the leader's lock: tabs that reached this worker then join the next leader. */
  resign(): void
}

export async function lead(name: string, joins: MessagePort, makeView: () => WorkerApi): Promise<Leading> {
  const id = crypto.randomUUID()
  // Other tabs wait on it to learn this worker ended. Granted at once (the id is new), before anyone can ask for it.
  const resign = await holdLock(leaderLock(name, id))
  const views = new Set<WorkerApi>()
  const gone = new AbortController()

  joins.onmessage = async (ev: MessageEvent<JoinRequest>) => {
    const { port, holder } = ev.data
    const view = makeView()
    await view.open(name)
    views.add(view)
    Comlink.expose(view, port)
    // Its streams stop at once: nobody is left to confirm what they sent.
    const ended = () => {
      views.delete(view)
      port.close()
      return view.close({ handover: true })
    }
    whenFree(holder, ended, { signal: gone.signal }) // not once this leader ends first
  }

  return {
    id,
    async closeViews() {
      joins.close()
      gone.abort()
      // A handover: the tabs' streams stop without an end, and re-attach to the next leader.
      await Promise.all([...views].map((v) => v.close({ handover: true }).catch(() => {})))
      views.clear()
    },
    resign,
  }
}
