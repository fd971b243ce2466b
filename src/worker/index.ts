// The dedicated module worker: one per open database. The page spawns it
// through src/client (openDatabase) and talks to it with Comlink.

import * as Comlink from 'comlink'
import { installErrorTransfer } from '../protocol/comlink-errors'
import { makeApi } from './api'

installErrorTransfer()
Comlink.expose(makeApi())
