// A small IndexedDB database of tabgres's own ('tabgres'): the template data
// directory (a fresh cluster with capture installed, made once per origin)
// and the names of databases that have been created from it.
//
// Why a template: initdb inside WASM takes seconds; loading a dumped data
// directory takes a fraction of that (PGlite's dumpDataDir/loadDataDir).

const DB_NAME = 'tabgres'
const TEMPLATES = 'templates'
const DATABASES = 'databases'

/** An IndexedDB request as a promise. */
export function request<T>(r: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    r.onsuccess = () => resolve(r.result)
    r.onerror = () => reject(r.error)
  })
}

function openRegistry(): Promise<IDBDatabase> {
  const r = indexedDB.open(DB_NAME, 1)
  r.onupgradeneeded = () => {
    r.result.createObjectStore(TEMPLATES)
    r.result.createObjectStore(DATABASES)
  }
  return request(r)
}

async function withStore<T>(store: string, mode: IDBTransactionMode, fn: (s: IDBObjectStore) => IDBRequest<T>): Promise<T> {
  const db = await openRegistry()
  try {
    const tx = db.transaction(store, mode, { durability: 'strict' })
    const result = await request(fn(tx.objectStore(store)))
    await new Promise<void>((resolve, reject) => {
      tx.oncomplete = () => resolve()
      tx.onerror = tx.onabort = () => reject(tx.error)
    })
    return result
  } finally {
    db.close()
  }
}

/**
 * The template archive stored under `key`. Stored as bytes: WebKit (Safari,
 * every iPhone browser) refuses a Blob in IndexedDB in a fresh or private
 * profile. A registry written before that holds a Blob: read, then rewritten
 * as bytes.
 */
export async function loadTemplate(key: string): Promise<Uint8Array | undefined> {
  const stored = await withStore(TEMPLATES, 'readonly', (s) => s.get(key) as IDBRequest<Uint8Array | Blob | undefined>)
  if (!(stored instanceof Blob)) return stored
  const bytes = new Uint8Array(await stored.arrayBuffer())
  await saveTemplate(key, bytes)
  return bytes
}

export async function saveTemplate(key: string, data: Uint8Array): Promise<void> {
  await withStore(TEMPLATES, 'readwrite', (s) => s.put(data, key))
}

export async function isKnownDatabase(name: string): Promise<boolean> {
  return (await withStore(DATABASES, 'readonly', (s) => s.count(name))) > 0
}

export async function rememberDatabase(name: string): Promise<void> {
  await withStore(DATABASES, 'readwrite', (s) => s.put({ createdAt: Date.now() }, name))
}
