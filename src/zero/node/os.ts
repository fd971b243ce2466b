// `node:os` for the tab: one machine with one core, the worker's.

export const EOL = '\n'
export const devNull = '/dev/null'
export const platform = () => 'linux'
export const type = () => 'Linux'
export const arch = () => 'wasm32'
export const machine = () => 'wasm32'
export const release = () => '0.0.0'
export const version = () => 'browser'
export const hostname = () => 'tab'
export const homedir = () => '/'
export const tmpdir = () => '/tmp'
export const endianness = () => 'LE'
export const uptime = () => performance.now() / 1000
export const loadavg = () => [0, 0, 0]
export const totalmem = () => (navigator as { deviceMemory?: number }).deviceMemory ?? 4 * 2 ** 30
export const freemem = () => totalmem()
/** One: zero-cache sizes its syncer pool by this, and everything here shares the worker's one thread. */
export const availableParallelism = () => 1
export const cpus = () => [{ model: 'browser', speed: 0, times: { user: 0, nice: 0, sys: 0, idle: 0, irq: 0 } }]
/** Loopback only: every address a service here can be reached at is in this worker (net.ts). */
export const networkInterfaces = () => ({
  lo: [{ address: '127.0.0.1', netmask: '255.0.0.0', family: 'IPv4', mac: '00:00:00:00:00:00', internal: true, cidr: '127.0.0.1/8' }],
})
export const userInfo = () => ({ uid: 0, gid: 0, username: 'tab', homedir: '/', shell: null })
export const constants = { signals: { SIGINT: 2, SIGTERM: 15, SIGKILL: 9, SIGHUP: 1, SIGQUIT: 3 }, errno: {}, priority: {} }
export default { EOL, devNull, platform, type, arch, machine, release, version, hostname, homedir, tmpdir, endianness, uptime, loadavg, totalmem, freemem, availableParallelism, cpus, networkInterfaces, userInfo, constants }
