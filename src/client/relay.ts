// A wire session's port, relayed by the page: the session runs in the leading
// worker, which may be another tab's and may go away. Its port then says
// nothing (a MessagePort has no peer-death event); the page learns of it from
// the leader's lock and ends the client's end as a lost connection (null, as
// the worker posts when it ends a session). Buffers pass through transferred.

/** Pipes `client` <-> `session` until either ends or `lost` resolves. */
export function relayWire(client: MessagePort, session: MessagePort, lost: Promise<unknown>): void {
  let open = true
  const end = () => {
    if (!open) return
    open = false
    client.postMessage(null)
    session.postMessage(null)
    client.close()
    session.close()
  }
  const pipe = (from: MessagePort, to: MessagePort) => {
    from.onmessage = (ev: MessageEvent<ArrayBuffer | null>) => {
      if (!open) return
      if (ev.data === null) return end()
      to.postMessage(ev.data, ev.data instanceof ArrayBuffer ? [ev.data] : [])
    }
  }
  pipe(client, session)
  pipe(session, client)
  void lost.then(end)
}
