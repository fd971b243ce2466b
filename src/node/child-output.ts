// A child process that tabgres starts next to itself (the server, zero-cache):
// its output line by line, its last lines for an error message, its exit.

import type { ChildProcess } from 'node:child_process'
import { createInterface } from 'node:readline'

const TAIL = 40

export interface Supervised {
  /** Settles with the exit code (or signal) when the process has ended. */
  readonly exited: Promise<number | string>
  /** Its last lines (stdout and stderr), for saying why it failed. */
  lastLines(): string
  /** SIGTERM unless it has ended, then the exit. */
  stop(): Promise<number | string>
}

export function supervise(child: ChildProcess, onLine: (line: string) => void): Supervised {
  const tail: string[] = []
  const line = (l: string) => {
    tail.push(l)
    if (tail.length > TAIL) tail.shift()
    onLine(l)
  }
  createInterface({ input: child.stdout! }).on('line', line)
  createInterface({ input: child.stderr! }).on('line', line)
  const exited = new Promise<number | string>((res) => child.once('exit', (code, signal) => res(code ?? signal ?? 'unknown')))
  return {
    exited,
    lastLines: () => tail.join('\n'),
    stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM')
      return exited
    },
  }
}
