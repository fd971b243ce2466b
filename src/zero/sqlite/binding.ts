// sqlite3.wasm (scripts/build-sqlite.ts) instantiated over a MemoryFiles: the
// C API it exports, typed, and the few memory helpers every caller needs.
// One instance holds every connection of a worker, which is what lets wal2's
// readers and writer share a wal-index (see vfs.c).

import { MemoryFiles } from './files'

/** The exports scripts/build-sqlite.ts asks for. Pointers are i32, int64 are bigint. */
export interface SqliteExports {
  memory: WebAssembly.Memory
  _initialize(): void
  malloc(n: number): number
  free(p: number): void
  sqlite3_initialize(): number
  sqlite3_libversion(): number
  sqlite3_sourceid(): number
  sqlite3_open_v2(zFilename: number, ppDb: number, flags: number, zVfs: number): number
  sqlite3_close_v2(db: number): number
  sqlite3_extended_result_codes(db: number, on: number): number
  sqlite3_errmsg(db: number): number
  sqlite3_extended_errcode(db: number): number
  sqlite3_errstr(rc: number): number
  sqlite3_error_offset(db: number): number
  sqlite3_exec(db: number, zSql: number, callback: number, arg: number, errmsg: number): number
  sqlite3_prepare_v3(db: number, zSql: number, nByte: number, flags: number, ppStmt: number, pzTail: number): number
  sqlite3_finalize(stmt: number): number
  sqlite3_reset(stmt: number): number
  sqlite3_clear_bindings(stmt: number): number
  sqlite3_step(stmt: number): number
  sqlite3_sql(stmt: number): number
  sqlite3_bind_parameter_count(stmt: number): number
  sqlite3_bind_parameter_name(stmt: number, i: number): number
  sqlite3_bind_double(stmt: number, i: number, v: number): number
  sqlite3_bind_int64(stmt: number, i: number, v: bigint): number
  sqlite3_bind_text(stmt: number, i: number, p: number, n: number, destructor: number): number
  sqlite3_bind_blob(stmt: number, i: number, p: number, n: number, destructor: number): number
  sqlite3_bind_null(stmt: number, i: number): number
  sqlite3_column_count(stmt: number): number
  sqlite3_column_name(stmt: number, i: number): number
  sqlite3_column_type(stmt: number, i: number): number
  sqlite3_column_double(stmt: number, i: number): number
  sqlite3_column_int64(stmt: number, i: number): bigint
  sqlite3_column_text(stmt: number, i: number): number
  sqlite3_column_blob(stmt: number, i: number): number
  sqlite3_column_bytes(stmt: number, i: number): number
  sqlite3_column_decltype(stmt: number, i: number): number
  sqlite3_column_database_name(stmt: number, i: number): number
  sqlite3_column_table_name(stmt: number, i: number): number
  sqlite3_column_origin_name(stmt: number, i: number): number
  sqlite3_changes64(db: number): bigint
  sqlite3_last_insert_rowid(db: number): bigint
  sqlite3_get_autocommit(db: number): number
  sqlite3_stmt_readonly(stmt: number): number
  sqlite3_stmt_busy(stmt: number): number
  sqlite3_stmt_scanstatus_v2(stmt: number, idx: number, op: number, flags: number, out: number): number
  sqlite3_stmt_scanstatus_reset(stmt: number): void
  sqlite3_db_readonly(db: number, zDbName: number): number
  sqlite3_busy_timeout(db: number, ms: number): number
}

export class Sqlite {
  readonly files: MemoryFiles
  readonly c: SqliteExports
  readonly #encoder = new TextEncoder()
  readonly #decoder = new TextDecoder()
  #u8: Uint8Array
  #view: DataView
  /** Eight bytes for out-parameters (a pointer, an int, a double). */
  readonly out: number

  constructor(instance: WebAssembly.Instance, files: MemoryFiles) {
    this.c = instance.exports as unknown as SqliteExports
    this.files = files
    this.#u8 = new Uint8Array(this.c.memory.buffer)
    this.#view = new DataView(this.c.memory.buffer)
    this.c._initialize()
    const rc = this.c.sqlite3_initialize()
    if (rc !== 0) throw new Error(`sqlite3_initialize failed (${rc})`)
    this.out = this.c.malloc(8)
  }

  /** Memory views, renewed when the heap has grown (growth detaches the old buffer). */
  get u8(): Uint8Array {
    if (this.#u8.buffer !== this.c.memory.buffer) {
      this.#u8 = new Uint8Array(this.c.memory.buffer)
      this.#view = new DataView(this.c.memory.buffer)
    }
    return this.#u8
  }

  get view(): DataView {
    void this.u8
    return this.#view
  }

  /** A NUL-terminated UTF-8 copy of `s` on the heap; the caller frees it. */
  cString(s: string): { ptr: number; length: number } {
    const max = s.length * 3 + 1
    const ptr = this.c.malloc(max)
    if (!ptr) throw new RangeError('out of memory')
    const { written } = this.#encoder.encodeInto(s, this.u8.subarray(ptr, ptr + max - 1))
    this.u8[ptr + written] = 0
    return { ptr, length: written }
  }

  /** The string at `ptr`: NUL-terminated, or `bytes` long. */
  string(ptr: number, bytes?: number): string {
    if (!ptr) return ''
    const u8 = this.u8
    let end = bytes === undefined ? ptr : ptr + bytes
    if (bytes === undefined) while (u8[end] !== 0) end++
    return this.#decoder.decode(u8.subarray(ptr, end))
  }

  get version(): string {
    return this.string(this.c.sqlite3_libversion())
  }

  get sourceId(): string {
    return this.string(this.c.sqlite3_sourceid())
  }
}

/** Instantiates sqlite3.wasm (a compiled module, or its bytes) over `files`. */
export async function instantiateSqlite(module: WebAssembly.Module | BufferSource, files = new MemoryFiles()): Promise<Sqlite> {
  let sqlite: Sqlite | undefined
  const heap = (ptr: number, n: number) => sqlite!.u8.subarray(ptr, ptr + n)
  const name = (ptr: number) => sqlite!.string(ptr)
  const imports = {
    tab: {
      open: (zName: number, flags: number) => files.open(name(zName), flags),
      close: (id: number) => files.close(id),
      read: (id: number, ptr: number, n: number, offset: number) => files.read(id, heap(ptr, n), offset),
      write: (id: number, ptr: number, n: number, offset: number) => files.write(id, heap(ptr, n), offset),
      truncate: (id: number, size: number) => files.truncate(id, size),
      // Durability is persistence's business: it takes the changes between calls.
      sync: () => 0,
      size: (id: number) => files.fileSize(id),
      delete: (zName: number) => files.delete(name(zName)),
      exists: (zName: number) => (files.exists(name(zName)) ? 1 : 0),
      random: (ptr: number, n: number) => {
        const bytes = heap(ptr, n)
        // getRandomValues takes at most 65,536 bytes per call.
        for (let at = 0; at < n; at += 65536) crypto.getRandomValues(bytes.subarray(at, Math.min(n, at + 65536)))
      },
      now: () => Date.now(),
    },
  }
  const instance =
    module instanceof WebAssembly.Module
      ? await WebAssembly.instantiate(module, imports)
      : (await WebAssembly.instantiate(module, imports)).instance
  sqlite = new Sqlite(instance, files)
  return sqlite
}
