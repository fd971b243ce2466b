// `node:fs/promises` for the tab: the promise forms of ./fs.

import { promises } from './fs'

export const { stat, lstat, readFile, writeFile, appendFile, mkdir, mkdtemp, readdir, rm, rmdir, unlink, rename, access, realpath, constants } = promises
export default promises
