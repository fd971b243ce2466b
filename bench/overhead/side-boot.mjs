// Worker entry for bench/overhead/side.ts: registers tsx in this thread (a
// worker's execArgv cannot carry --import here), then loads the TypeScript.
import { register } from 'tsx/esm/api'

register()
await import('./side.ts')
