// A wire session whose port was handed to another worker ends when that
// worker does. A MessagePort says nothing when the context holding its other
// end is terminated (Chromium fires no 'close'), unlike a socket, whose peer
// sees a dead process's connection reset. A Web Lock does: the user of the
// port holds one (its name comes with connect()), a lock held by a context
// that ends is released, and this request for it is then granted.

import { whenFree } from '../../protocol/web-locks'

/** Ends `session` once the Web Lock `name` is free; stops asking when the session ends first. */
export function endWhenFree(name: string, session: { end(): Promise<void>; closed: Promise<void> }, port: MessagePort): void {
  const stop = new AbortController()
  void session.closed.then(() => stop.abort())
  whenFree(
    name,
    async () => {
      // As after a connection reset: roll back, release, and end the port in case its user still listens.
      await session.end()
      port.postMessage(null)
      port.close()
    },
    { signal: stop.signal },
  )
}
