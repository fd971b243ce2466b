// A baseline for commit-to-frame: the frames' own transport with nothing else.
// The worker makes a MessageChannel, hands one port to the page, and then,
// every 12 ms (the page idles between them, as between commits), posts a
// transferred ArrayBuffer holding its send time on the shared clock.

const INTERVAL_MS = 12

self.onmessage = (ev: MessageEvent<{ count: number }>) => {
  const { port1, port2 } = new MessageChannel()
  self.postMessage({ port: port2 }, [port2])
  let sent = 0
  const send = () => {
    const buffer = new ArrayBuffer(8)
    new Float64Array(buffer)[0] = performance.timeOrigin + performance.now()
    port1.postMessage(buffer, [buffer])
    if (++sent < ev.data.count) setTimeout(send, INTERVAL_MS)
  }
  setTimeout(send, INTERVAL_MS)
}
