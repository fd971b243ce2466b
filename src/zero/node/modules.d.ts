// The polyfill packages these modules wrap are Node's own APIs as libraries:
// typed as the built-ins they stand for.
declare module 'readable-stream' {
  import stream = require('node:stream')
  export = stream
}
declare module 'path-browserify' {
  import path from 'node:path'
  export default path
}
