// The baseline for commit-to-frame latency: the cheapest worker-to-page round
// trip there is, a worker that posts back whatever it receives.

self.onmessage = (ev: MessageEvent) => self.postMessage(ev.data)
