// A baseline for commit-to-frame: the frames' own transport with nothing else.
// The worker makes a MessageChannel, hands one port to the page, and then,
// every 12 ms (the page idles between them, as between commits), posts a
// transferred ArrayBuffer holding its send time on its clock (which the page
// first learns to convert: asked 'clock', it answers with its time).

const INTERVAL_MS = 12
const { port1, port2 } = new MessageChannel()

self.onmessage = (ev: MessageEvent<'port' | 'clock' | { count: number }>) => {
  if (ev.data === 'clock') return self.postMessage(performance.timeOrigin + performance.now())
  if (ev.data === 'port') return self.postMessage({ port: port2 }, [port2])
  const count = ev.data.count
  let sent = 0
  const send = () => {
    const buffer = new ArrayBuffer(8)
    new Float64Array(buffer)[0] = performance.timeOrigin + performance.now()
    port1.postMessage(buffer, [buffer])
    if (++sent < count) setTimeout(send, INTERVAL_MS)
  }
  setTimeout(send, INTERVAL_MS)
}
