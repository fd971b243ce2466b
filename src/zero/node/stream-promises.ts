// `node:stream/promises` for the tab.

import { promises } from './stream'

export const { pipeline, finished } = promises
export default promises
