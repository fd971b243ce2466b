// Starting zero-cache as the tab runs it, from Node (run.ts): the options for
// startZeroCache, and the replica as that process answers for it.

import type { Readable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import type { ZeroCache, ZeroCacheOptions } from '../../../src/node/zero-cache'
import { ReplicaReader } from '../zero-replica'

/** zero-cache in one process on the tab's SQLite, its files kept in the image file `image`. */
export function inOneProcess(image: string): Pick<ZeroCacheOptions, 'args' | 'replyPipe' | 'env' | 'replicaFile'> {
  return {
    args: ['--import', 'tsx', '--import', fileURLToPath(new URL('./register.mjs', import.meta.url)), fileURLToPath(new URL('./run.ts', import.meta.url))],
    replyPipe: true,
    // A name in that process's memory.
    replicaFile: '/zero/replica.db',
    env: { TABGRES_ZERO_IMAGE: image, ZERO_NUM_SYNC_WORKERS: '1' },
  }
}

export function replicaOf(zero: ZeroCache): ReplicaReader {
  const p = zero.process
  return new ReplicaReader({ requests: p.stdin!, replies: p.stdio[3] as Readable, process: p })
}
