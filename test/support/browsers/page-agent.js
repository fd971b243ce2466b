// Runs inside the page under test, in every engine: finds the elements a
// locator (./page.ts) describes. ./page.ts reads this file as text and
// evaluates it in the page once per document; it is never transformed by a
// bundler, so it stays plain JavaScript that any engine runs as it is.
//
// A locator is a list of steps, each narrowing the elements the one before
// found, with Playwright's meanings: css and test ids match descendants,
// text matches the smallest elements whose text matches (whitespace
// normalized; a string matches case-insensitively as a substring unless
// exact), hasText/has keep the elements whose text matches or that contain a
// match of an inner locator, nth picks one (negative counts from the end).
;(function () {
  if (window.__e2eAgent) return

  function norm(s) {
    return (s || '').replace(/\s+/g, ' ').trim()
  }

  function textMatches(text, p, exact) {
    if (p.re !== undefined) return new RegExp(p.re, p.flags).test(norm(text))
    return exact ? norm(text) === norm(p.s) : norm(text).toLowerCase().includes(norm(p.s).toLowerCase())
  }

  function inOrder(els) {
    return els.sort(function (a, b) {
      return a === b ? 0 : a.compareDocumentPosition(b) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1
    })
  }

  function under(scope, css) {
    var out = new Set()
    for (var i = 0; i < scope.length; i++) {
      var found = scope[i].querySelectorAll(css)
      for (var j = 0; j < found.length; j++) out.add(found[j])
    }
    return inOrder(Array.from(out))
  }

  var ROLES = {
    button: 'button, [role=button], input[type=button], input[type=submit], input[type=reset]',
    checkbox: 'input[type=checkbox], [role=checkbox]',
    link: 'a[href], [role=link]',
    textbox: 'input:not([type]), input[type=text], textarea, [role=textbox]',
  }

  function accessibleName(el) {
    var label = el.getAttribute('aria-label')
    if (label) return label
    if (el.tagName === 'INPUT' && el.value && /^(button|submit|reset)$/.test(el.type)) return el.value
    return norm(el.textContent)
  }

  function step(els, st) {
    switch (st.kind) {
      case 'css':
        return under(els, st.css)
      case 'testId':
        return under(els, '[data-testid="' + CSS.escape(st.id) + '"]')
      case 'role': {
        var css = ROLES[st.role]
        if (!css) throw new Error('role not known to the e2e agent: ' + st.role)
        return under(els, css).filter(function (e) {
          return !st.name || textMatches(accessibleName(e), st.name, st.exact)
        })
      }
      case 'text': {
        // As Playwright's text engine: a scope element whose own text matches counts too.
        var scoped = els.filter(function (e) {
          return e.nodeType === 1
        })
        var all = inOrder(Array.from(new Set(scoped.concat(under(els, '*'))))).filter(function (e) {
          return e.tagName !== 'SCRIPT' && e.tagName !== 'STYLE' && textMatches(e.textContent, st.p, st.exact)
        })
        // The smallest: an element none of whose descendants matches too.
        return all.filter(function (e) {
          return !all.some(function (o) {
            return o !== e && e.contains(o)
          })
        })
      }
      case 'hasText':
        return els.filter(function (e) {
          return textMatches(e.textContent, st.p, false)
        })
      case 'has':
        return els.filter(function (e) {
          return resolve(st.steps, [e]).length > 0
        })
      case 'nth': {
        var i = st.i < 0 ? els.length + st.i : st.i
        return els[i] ? [els[i]] : []
      }
    }
    throw new Error('unknown locator step: ' + JSON.stringify(st))
  }

  function resolve(steps, scope) {
    var els = scope || [document]
    for (var i = 0; i < steps.length; i++) els = step(els, steps[i])
    return els
  }

  /** The one element `steps` find (null when none yet); more than one is an error, as in Playwright's strict mode. */
  function one(steps, describe) {
    var els = resolve(steps)
    if (els.length > 1) throw new Error('strict mode: ' + els.length + ' elements match ' + describe)
    return els[0] || null
  }

  function visible(el) {
    var r = el.getBoundingClientRect()
    return r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== 'hidden'
  }

  var picks = 0
  /** Marks the one element for a native action (a CSS selector the driver can use), once it is visible and enabled. */
  function pick(steps, describe, hiddenToo) {
    var el = one(steps, describe)
    if (!el || (!hiddenToo && !visible(el)) || el.disabled) return null
    var id = String(++picks)
    el.setAttribute('data-e2e-pick', id)
    return '[data-e2e-pick="' + id + '"]'
  }

  window.__e2eAgent = { resolve: resolve, one: one, pick: pick, visible: visible, norm: norm }
})()
