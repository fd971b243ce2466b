// "Later", as Node's setImmediate means it: after the current task and its
// microtasks, before timers that are due later. A browser has no
// setImmediate, and setTimeout(0) is clamped to 4 ms once nested, which every
// loopback packet and thread message would pay; a MessageChannel is not.

const queue: (() => void)[] = []
let channel: MessageChannel | undefined

function drain(): void {
  for (const fn of queue.splice(0)) {
    try {
      fn()
    } catch (e) {
      // One callback's throw must not drop those queued behind it; it still surfaces as uncaught.
      setTimeout(() => {
        throw e
      })
    }
  }
}

/** Node's own setImmediate where there is one (zero-cache on the tab's SQLite in Node, for tests). */
const immediate = (globalThis as { setImmediate?: (fn: () => void) => unknown }).setImmediate

export function nextTask(fn: () => void): void {
  if (immediate) return void immediate(fn)
  if (!channel) {
    channel = new MessageChannel()
    channel.port1.onmessage = drain
  }
  if (queue.push(fn) === 1) channel.port2.postMessage(null)
}
