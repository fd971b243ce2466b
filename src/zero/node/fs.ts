// `node:fs` for the tab. zero-cache touches few files besides its SQLite
// replica: it checks that the replica exists and how big it is, deletes it
// (with its -wal, -wal2, -shm) to resync, and keeps small files of its own.
// The replica's files are the SQLite VFS's (src/zero/sqlite/files.ts), which
// persistence keeps; the host mounts them here so that both see one file
// system. Other files live in memory for the worker's lifetime.

import type { MemoryFiles } from '../sqlite/files'
import { Buffer } from './buffer'
import { normalize, dirname, resolve } from './path'

let sqliteFiles: MemoryFiles | undefined
const plain = new Map<string, Uint8Array>()
const dirs = new Set<string>(['/', '/tmp'])
const times = new Map<string, Date>()

/** The host (../tab) shares the SQLite VFS's files with this module. */
export function mountSqliteFiles(files: MemoryFiles): void {
  sqliteFiles = files
}

function abs(p: string | URL): string {
  return normalize(resolve('/', typeof p === 'string' ? p : decodeURIComponent(p.pathname)))
}

function fsError(code: 'ENOENT' | 'EEXIST' | 'ENOTDIR' | 'EISDIR' | 'ENOTEMPTY', syscall: string, path: string): Error {
  const text = { ENOENT: 'no such file or directory', EEXIST: 'file already exists', ENOTDIR: 'not a directory', EISDIR: 'illegal operation on a directory', ENOTEMPTY: 'directory not empty' }[code]
  return Object.assign(new Error(`${code}: ${text}, ${syscall} '${path}'`), { code, errno: -1, syscall, path })
}

function fileSize(p: string): number | undefined {
  return plain.get(p)?.length ?? sqliteFiles?.size(p)
}

function names(): string[] {
  return [...plain.keys(), ...(sqliteFiles?.names() ?? [])]
}

function isDir(p: string): boolean {
  return dirs.has(p) || names().some((n) => n.startsWith(p === '/' ? '/' : p + '/'))
}

export class Stats {
  constructor(
    readonly size: number,
    private readonly dir: boolean,
    readonly mtime: Date,
  ) {}
  get mtimeMs(): number {
    return this.mtime.getTime()
  }
  get ctime(): Date {
    return this.mtime
  }
  get birthtime(): Date {
    return this.mtime
  }
  get atime(): Date {
    return this.mtime
  }
  readonly mode = 0o644
  readonly blksize = 4096
  get blocks(): number {
    return Math.ceil(this.size / 512)
  }
  isFile(): boolean {
    return !this.dir
  }
  isDirectory(): boolean {
    return this.dir
  }
  isSymbolicLink(): boolean {
    return false
  }
}

export function existsSync(p: string | URL): boolean {
  const a = abs(p)
  return fileSize(a) !== undefined || isDir(a)
}

export function statSync(p: string | URL, options: { throwIfNoEntry?: boolean } = {}): Stats | undefined {
  const a = abs(p)
  const size = fileSize(a)
  if (size !== undefined) return new Stats(size, false, times.get(a) ?? new Date(0))
  if (isDir(a)) return new Stats(4096, true, new Date(0))
  if (options.throwIfNoEntry === false) return undefined
  throw fsError('ENOENT', 'stat', a)
}
export const lstatSync = statSync

export function readFileSync(p: string | URL, options?: BufferEncoding | { encoding?: BufferEncoding | null }): Buffer | string {
  const a = abs(p)
  const data = plain.get(a)
  if (!data) throw fsError(isDir(a) ? 'EISDIR' : 'ENOENT', 'open', a)
  const encoding = typeof options === 'string' ? options : options?.encoding
  const b = Buffer.from(data)
  return encoding ? b.toString(encoding) : b
}

export function writeFileSync(p: string | URL, data: string | ArrayBufferView, options?: BufferEncoding | { encoding?: BufferEncoding; flag?: string }): void {
  const a = abs(p)
  if (!isDir(dirname(a))) throw fsError('ENOENT', 'open', a)
  const flag = typeof options === 'object' ? options.flag : undefined
  if (flag?.includes('x') && existsSync(a)) throw fsError('EEXIST', 'open', a)
  const encoding = typeof options === 'string' ? options : options?.encoding
  plain.set(a, typeof data === 'string' ? Buffer.from(data, encoding ?? 'utf8') : Buffer.from(data.buffer, data.byteOffset, data.byteLength))
  times.set(a, new Date())
}

export function appendFileSync(p: string | URL, data: string | ArrayBufferView): void {
  const a = abs(p)
  const old = plain.get(a) ?? new Uint8Array()
  writeFileSync(a, Buffer.concat([old, typeof data === 'string' ? Buffer.from(data) : Buffer.from(data.buffer, data.byteOffset, data.byteLength)]))
}

export function mkdirSync(p: string | URL, options: { recursive?: boolean } = {}): string | undefined {
  const a = abs(p)
  if (isDir(a)) {
    if (options.recursive) return undefined
    throw fsError('EEXIST', 'mkdir', a)
  }
  if (!isDir(dirname(a))) {
    if (!options.recursive) throw fsError('ENOENT', 'mkdir', a)
    mkdirSync(dirname(a), options)
  }
  dirs.add(a)
  return a
}

export function readdirSync(p: string | URL): string[] {
  const a = abs(p)
  if (!isDir(a)) throw fsError(fileSize(a) === undefined ? 'ENOENT' : 'ENOTDIR', 'scandir', a)
  const prefix = a === '/' ? '/' : a + '/'
  const out = new Set<string>()
  for (const n of [...names(), ...dirs]) if (n.startsWith(prefix) && n !== a) out.add(n.slice(prefix.length).split('/')[0]!)
  return [...out].sort()
}

export function rmSync(p: string | URL, options: { force?: boolean; recursive?: boolean } = {}): void {
  const a = abs(p)
  if (fileSize(a) !== undefined) {
    plain.delete(a)
    sqliteFiles?.delete(a)
    times.delete(a)
    return
  }
  if (isDir(a)) {
    if (!options.recursive) throw fsError('EISDIR', 'rm', a)
    for (const n of names()) if (n.startsWith(a + '/')) rmSync(n)
    for (const d of [...dirs]) if (d === a || d.startsWith(a + '/')) dirs.delete(d)
    return
  }
  if (!options.force) throw fsError('ENOENT', 'rm', a)
}

export function unlinkSync(p: string | URL): void {
  const a = abs(p)
  if (fileSize(a) === undefined) throw fsError(isDir(a) ? 'EISDIR' : 'ENOENT', 'unlink', a)
  rmSync(a)
}

export function rmdirSync(p: string | URL, options: { recursive?: boolean } = {}): void {
  const a = abs(p)
  if (!isDir(a)) throw fsError('ENOENT', 'rmdir', a)
  if (!options.recursive && readdirSync(a).length > 0) throw fsError('ENOTEMPTY', 'rmdir', a)
  rmSync(a, { recursive: true })
}

export function renameSync(from: string | URL, to: string | URL): void {
  const a = abs(from)
  const data = plain.get(a)
  if (!data) throw fsError('ENOENT', 'rename', a)
  plain.delete(a)
  plain.set(abs(to), data)
}

export function mkdtempSync(prefix: string): string {
  const p = prefix + crypto.randomUUID().slice(0, 6)
  mkdirSync(p, { recursive: true })
  return abs(p)
}

export function accessSync(p: string | URL): void {
  if (!existsSync(p)) throw fsError('ENOENT', 'access', abs(p))
}

export function realpathSync(p: string | URL): string {
  accessSync(p)
  return abs(p)
}
realpathSync.native = realpathSync

export function chmodSync(p: string | URL): void {
  accessSync(p)
}
export const chownSync = chmodSync

/**
 * File descriptors: nothing zero-cache runs in the tab writes through them
 * (a dependency of its .env loader refers to them), so they fail by name.
 */
function noDescriptors(): never {
  throw Object.assign(new Error('file descriptors are not available in a browser tab'), { code: 'ERR_TABGRES_UNAVAILABLE_IN_TAB' })
}
export const openSync = noDescriptors
export const closeSync = noDescriptors
export const readSync = noDescriptors
export const writeSync = noDescriptors
export const fsyncSync = noDescriptors

/** Callback forms, for dependencies that use them. */
function callback<A extends unknown[], R>(fn: (...args: A) => R) {
  return (...args: [...A, (e: Error | null, r?: R) => void]) => {
    const cb = args.pop() as (e: Error | null, r?: R) => void
    let r: R
    try {
      r = fn(...(args as unknown as A))
    } catch (e) {
      return void queueMicrotask(() => cb(e as Error))
    }
    queueMicrotask(() => cb(null, r))
  }
}

export const exists = (p: string, cb: (b: boolean) => void) => queueMicrotask(() => cb(existsSync(p)))
export const stat = callback(statSync)
export const lstat = stat
export const readFile = callback(readFileSync)
export const writeFile = callback(writeFileSync)
export const mkdir = callback(mkdirSync)
export const readdir = callback(readdirSync)
export const unlink = callback(unlinkSync)
export const rm = callback(rmSync)
export const realpath = callback(realpathSync)
export const access = callback(accessSync)
export const rename = callback(renameSync)
export const rmdir = callback(rmdirSync)
export const mkdtemp = callback(mkdtempSync)
export const appendFile = callback(appendFileSync)
export const chmod = callback(chmodSync)
export const chown = callback(chownSync)
export const open = callback(openSync)
export const close = callback(closeSync)
export const read = callback(readSync)
export const write = callback(writeSync)
export const fsync = callback(fsyncSync)

export function createReadStream(): never {
  throw Object.assign(new Error('fs.createReadStream is not available in a browser tab'), { code: 'ERR_METHOD_NOT_IMPLEMENTED' })
}
export const createWriteStream = createReadStream
export function watch(): never {
  throw Object.assign(new Error('fs.watch is not available in a browser tab'), { code: 'ERR_METHOD_NOT_IMPLEMENTED' })
}

export const constants = { F_OK: 0, R_OK: 4, W_OK: 2, X_OK: 1, O_RDONLY: 0, O_WRONLY: 1, O_RDWR: 2, O_CREAT: 64, O_EXCL: 128 }

const sync = { existsSync, statSync, lstatSync, readFileSync, writeFileSync, appendFileSync, mkdirSync, readdirSync, rmSync, unlinkSync, rmdirSync, renameSync, mkdtempSync, accessSync, realpathSync, chmodSync, chownSync, openSync, closeSync, readSync, writeSync, fsyncSync }

export const promises = {
  stat: async (p: string | URL) => statSync(p)!,
  lstat: async (p: string | URL) => statSync(p)!,
  readFile: async (p: string | URL, o?: Parameters<typeof readFileSync>[1]) => readFileSync(p, o),
  writeFile: async (p: string | URL, d: string | ArrayBufferView, o?: Parameters<typeof writeFileSync>[2]) => writeFileSync(p, d, o),
  appendFile: async (p: string | URL, d: string | ArrayBufferView) => appendFileSync(p, d),
  mkdir: async (p: string | URL, o?: { recursive?: boolean }) => mkdirSync(p, o),
  mkdtemp: async (prefix: string) => mkdtempSync(prefix),
  readdir: async (p: string | URL) => readdirSync(p),
  rm: async (p: string | URL, o?: { force?: boolean; recursive?: boolean }) => rmSync(p, o),
  rmdir: async (p: string | URL, o?: { recursive?: boolean }) => rmdirSync(p, o),
  unlink: async (p: string | URL) => unlinkSync(p),
  rename: async (a: string | URL, b: string | URL) => renameSync(a, b),
  access: async (p: string | URL) => accessSync(p),
  realpath: async (p: string | URL) => realpathSync(p),
  constants,
}

export default { ...sync, exists, stat, lstat, readFile, writeFile, mkdir, readdir, unlink, rm, realpath, access, rename, rmdir, mkdtemp, appendFile, chmod, chown, open, close, read, write, fsync, createReadStream, createWriteStream, watch, constants, promises, Stats }
