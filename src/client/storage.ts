// What the browser keeps of the page's data, and asking it to keep it.
//
// Browsers may evict an origin's storage: under storage pressure (Chromium,
// Firefox), or, in Safari and every iPhone browser, all script-writable
// storage (IndexedDB included) after 7 days of use of Safari without a visit
// to the site, unless the site is installed to the home screen. A
// persisted origin is exempt from eviction under pressure. The page asks once
// (navigator.storage.persist() is the window's alone, not a worker's), and
// db.storage() lets it tell its user where they stand.

export interface StorageState {
  /** The browser has agreed not to evict this origin's storage under pressure. */
  persisted: boolean
  /** Bytes this origin uses (all its storage, not only this database), as the browser estimates them; null where it gives none. */
  usage: number | null
  /** Bytes this origin may use; null where the browser gives none. */
  quota: number | null
}

let asked: Promise<boolean> | null = null

/**
 * Asks for persistent storage, once per page. Not awaited by the open: Chromium
 * answers by its own heuristics at once, but Firefox asks the user, and the
 * answer may never come.
 */
export function requestPersistence(): void {
  const storage = globalThis.navigator?.storage
  if (asked || typeof storage?.persist !== 'function') return
  asked = storage.persist().catch(() => false)
}

export async function storageState(): Promise<StorageState> {
  const storage = globalThis.navigator?.storage
  const [persisted, estimate] = await Promise.all([
    typeof storage?.persisted === 'function' ? storage.persisted().catch(() => false) : false,
    typeof storage?.estimate === 'function' ? storage.estimate().catch(() => null) : null,
  ])
  return { persisted, usage: estimate?.usage ?? null, quota: estimate?.quota ?? null }
}
