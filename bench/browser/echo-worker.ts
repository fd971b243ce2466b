// The baseline for commit-to-frame latency: the cheapest worker-to-page round
// trip there is, a worker that posts back whatever it receives. Asked for
// 'clock', it answers with its own time instead (the shared-clock check).

self.onmessage = (ev: MessageEvent) => self.postMessage(ev.data === 'clock' ? performance.timeOrigin + performance.now() : ev.data)
