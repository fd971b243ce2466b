// The dedicated module worker: one per open database. The page spawns it
// through src/client (openDatabase) and talks to it with Comlink.

import * as Comlink from 'comlink'
import { installErrorTransfer } from '../protocol/comlink-errors'
import { makeApi } from './api'
import { openEngine } from './engine'

/**
 * Where the build put the template (scripts/template-asset.ts), relative to
 * this entry module: bundlers hash and copy it, and split chunks move code
 * elsewhere, never an entry.
 */
const TEMPLATE_URL = new URL('./storage/template.tar.gz', import.meta.url)

installErrorTransfer()
Comlink.expose(makeApi((name, options, onProgress) => openEngine(name, options, onProgress, TEMPLATE_URL)))
