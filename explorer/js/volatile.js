// Boxes that do not tell one state from another, painted flat for state identity only (the stored screenshot
// keeps them). `volatile`: parts of the page itself, there on every visit: form fields (typed values, caret,
// focus ring), relative times ("3 minutes ago", <time>) and the site config's volatile selectors. `overlays`:
// what the browser draws over the page for a moment: a keyboard-style focus ring around a control that is not
// a field, the validation bubble under the field that failed a submit (compared masked on both sides).
// Top document, viewport CSS pixels, [x, y, w, h].
function volatileBoxes(opts) {
  const vw = window.innerWidth, vh = window.innerHeight;
  const FIELD = 'textarea, select, [contenteditable=""], [contenteditable="true"], input:not([type=hidden])'
    + ':not([type=checkbox]):not([type=radio]):not([type=submit]):not([type=button]):not([type=reset])'
    + ':not([type=image]):not([type=file]):not([type=range]):not([type=color])';
  const TIME_ELEMENT = 'time, relative-time, time-ago, local-time, [datetime]';
  const RELATIVE = new RegExp(opts.relative, 'gi');  // explorer.observe.RELATIVE_TIME: one pattern for both
  const SHORT = /^\s*\d{1,3}\s?(?:s|m|min|h|d|w|mo|y)\s*$/i;  // "27m", "3h": a whole text node
  const RING = 4;  // px around a field or the focused element: outline, offset and shadow of a focus ring
  const boxes = [], overlays = [];

  function push(x0, y0, x1, y1, into) {
    x0 = Math.max(0, x0); y0 = Math.max(0, y0); x1 = Math.min(vw, x1); y1 = Math.min(vh, y1);
    const box = [x0, y0, x1 - x0, y1 - y0].map(v => Math.round(v * 10) / 10);
    if (x1 - x0 >= 1 && y1 - y0 >= 1) (into || boxes).push(box);
  }
  function around(r, m) { push(r.left - m, r.top - m, r.right + m, r.bottom + m); }
  function ring(r) {  // the band a focus ring paints, not what it encloses
    push(r.left - RING, r.top - RING, r.right + RING, r.top + 2, overlays);
    push(r.left - RING, r.bottom - 2, r.right + RING, r.bottom + RING, overlays);
    push(r.left - RING, r.top - RING, r.left + 2, r.bottom + RING, overlays);
    push(r.right - 2, r.top - RING, r.right + RING, r.bottom + RING, overlays);
  }
  function shown(el) {
    const st = getComputedStyle(el);
    return st.visibility === 'visible' && st.display !== 'none';
  }
  // A line of text changes width with its time: mask to the right edge of its block.
  function blockRight(node) {
    let el = node.nodeType === 1 ? node : node.parentElement;
    while (el && el !== document.body) {
      const d = getComputedStyle(el).display;
      if (d !== 'inline' && d !== 'contents') return el.getBoundingClientRect().right;
      el = el.parentElement;
    }
    return vw;
  }
  function lineBoxes(rects, right) {
    for (const r of rects) if (r.width > 0 && r.height > 0) push(r.left - 1, r.top, Math.max(r.right, right) + 1, r.bottom);
  }

  for (const el of document.querySelectorAll(FIELD)) if (shown(el)) around(el.getBoundingClientRect(), RING);
  for (const el of document.querySelectorAll(TIME_ELEMENT)) if (shown(el)) lineBoxes(el.getClientRects(), blockRight(el));
  for (const sel of opts.volatile || []) {
    let found = [];
    try { found = document.querySelectorAll(sel); } catch (e) { found = []; }
    for (const el of found) if (shown(el)) around(el.getBoundingClientRect(), 0);
  }

  const walker = document.createTreeWalker(document.body || document.documentElement, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = node.nodeValue;
    if (!text || text.length > 2000 || !node.parentElement || node.parentElement.closest('script,style,noscript')) continue;
    const spans = [];
    if (SHORT.test(text)) spans.push([0, text.length]);
    else for (const m of text.matchAll(RELATIVE)) spans.push([m.index, m.index + m[0].length]);
    for (const [a, b] of spans) {
      const range = document.createRange();
      range.setStart(node, a);
      range.setEnd(node, b);
      lineBoxes(range.getClientRects(), blockRight(node));
    }
  }

  let focused = document.activeElement;
  while (focused && focused.shadowRoot && focused.shadowRoot.activeElement) focused = focused.shadowRoot.activeElement;
  // A mouse click focuses a button without a ring; keyboard focus shows one (:focus-visible). A field's ring lies
  // inside its volatile box already.
  if (focused && focused !== document.body && focused.localName !== 'iframe' && focused.matches(':focus-visible')
      && !focused.matches(FIELD)) {
    ring(focused.getBoundingClientRect());
  }
  const invalid = window.__scalehopInvalid;  // set by the session's init script when a submit failed validation
  if (invalid && invalid.el.isConnected && invalid.el.matches(':invalid') && performance.now() - invalid.t < 10000) {
    const r = invalid.el.getBoundingClientRect();
    push(r.left - 16, r.bottom - 2, r.left + 440, r.bottom + 72, overlays);  // Chromium's bubble hangs under it
  }
  return { volatile: boxes, overlays };
}
