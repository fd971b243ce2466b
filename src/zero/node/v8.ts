// `node:v8` for the tab: heap figures as far as the browser reports them.

export function getHeapStatistics() {
  const m = (performance as { memory?: { usedJSHeapSize: number; totalJSHeapSize: number; jsHeapSizeLimit: number } }).memory
  return {
    total_heap_size: m?.totalJSHeapSize ?? 0,
    total_heap_size_executable: 0,
    total_physical_size: m?.totalJSHeapSize ?? 0,
    total_available_size: m ? m.jsHeapSizeLimit - m.usedJSHeapSize : 0,
    used_heap_size: m?.usedJSHeapSize ?? 0,
    heap_size_limit: m?.jsHeapSizeLimit ?? 0,
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
