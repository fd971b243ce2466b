// zero-cache's runner is not among @rocicorp/zero's package exports; the
// bundle resolves this path to its file (scripts/build-zero.ts). Its type,
// as run-worker.d.ts declares it, with the parent a single process has.
declare module '@rocicorp/zero/out/zero-cache/src/server/runner/run-worker.js' {
  export function runWorker(parent: null, env: Record<string, string | undefined>): Promise<void>
}
