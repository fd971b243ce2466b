// `node:path` for the tab: POSIX paths (path-browserify is Node's posix path).

import path from 'path-browserify'

export const { basename, dirname, extname, isAbsolute, join, normalize, relative, resolve, sep, delimiter, parse, format } = path
export const posix = path
export const win32 = path
export default path
