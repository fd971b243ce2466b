// `node:v8` for the tab: heap figures as far as the browser reports them.
// zero-cache sizes buffers from them (its change-log storer takes a share of
// heap_size_limit - used_heap_size before it pushes back on replication), so
// a limit of 0 would stall replication for good. Where the browser reports no
// heap (performance.memory is Chromium's, and absent in its workers), the
// limit is V8's usual 2 GiB old space and the use is unknown (0).

const DEFAULT_LIMIT = 2 * 1024 ** 3

function heap(): { used: number; total: number; limit: number } {
  const m = (performance as { memory?: { usedJSHeapSize: number; totalJSHeapSize: number; jsHeapSizeLimit: number } }).memory
  return m && m.jsHeapSizeLimit > 0 ? { used: m.usedJSHeapSize, total: m.totalJSHeapSize, limit: m.jsHeapSizeLimit } : { used: 0, total: 0, limit: DEFAULT_LIMIT }
}

export function getHeapStatistics() {
  const h = heap()
  return {
    total_heap_size: h.total,
    total_heap_size_executable: 0,
    total_physical_size: h.total,
    total_available_size: h.limit - h.used,
    used_heap_size: h.used,
    heap_size_limit: h.limit,
    malloced_memory: 0,
    peak_malloced_memory: 0,
    does_zap_garbage: 0,
    number_of_native_contexts: 1,
    number_of_detached_contexts: 0,
    total_global_handles_size: 0,
    used_global_handles_size: 0,
    external_memory: 0,
  }
}
export function getHeapSpaceStatistics(): never[] {
  return []
}
export function writeHeapSnapshot(): never {
  throw Object.assign(new Error('heap snapshots are not available in a browser tab'), { code: 'ERR_TABGRES_UNAVAILABLE_IN_TAB' })
}
export function setFlagsFromString(): void {}
export default { getHeapStatistics, getHeapSpaceStatistics, writeHeapSnapshot, setFlagsFromString }
