// Debian's Chromium for browser tests and benchmarks (Playwright cannot
// download browsers here); CHROMIUM_PATH points elsewhere on other machines.
// Without the networking flags Chromium keeps trying Google's hosts, which
// this network refuses.

export const chromiumPath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]
