// Runs first in every page of a built site under test (./built-site.ts puts
// it at the top of each HTML file): the page records its own uncaught errors,
// unhandled rejections and console errors in window.__pageErrors, because
// classic WebDriver (WebKit) reports none of them to the test, and the other
// tools report them differently. Plain JavaScript, never transformed.
;(function () {
  if (window.__pageErrors) return
  var errors = []
  window.__pageErrors = errors
  function push(kind, what) {
    var text = what && what.stack ? String(what.stack) : String(what)
    errors.push(kind + ': ' + text.slice(0, 2000))
  }
  window.addEventListener('error', function (e) {
    push('error', e.error || e.message)
  })
  window.addEventListener('unhandledrejection', function (e) {
    push('unhandled rejection', e.reason)
  })
  var consoleError = console.error
  console.error = function () {
    push('console.error', Array.prototype.map.call(arguments, String).join(' '))
    return consoleError.apply(console, arguments)
  }
})()
