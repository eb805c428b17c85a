// DOM helpers shared by the scripts scalehop evaluates in a page. Pure functions; they add nothing to the page.
const INTERACTIVE = [
  'a[href]', 'button', 'input', 'select', 'textarea', 'summary', '[onclick]', '[contenteditable=""]',
  '[contenteditable="true"]', '[tabindex]', '[role=button]', '[role=link]', '[role=tab]', '[role=menuitem]',
  '[role=menuitemcheckbox]', '[role=menuitemradio]', '[role=checkbox]', '[role=radio]', '[role=switch]',
  '[role=option]', '[role=combobox]', '[role=textbox]', '[role=searchbox]', '[role=slider]',
].join(',');
const CONTAINER = 'a[href],button,summary,[role=button],[role=link],[role=tab],[role=menuitem]';
const INPUT_ROLES = {
  checkbox: 'checkbox', radio: 'radio', submit: 'button', button: 'button', reset: 'button', image: 'button',
  range: 'slider', search: 'searchbox', file: 'button', color: 'button',
};

function clean(s) { return (s || '').replace(/\s+/g, ' ').trim(); }
function cut(s, n) { return s.length > n ? s.slice(0, n - 1) + '…' : s; }

// Descend through open shadow roots and same-origin iframes to the element really at (x, y).
function deepHit(doc, x, y) {
  let el = doc.elementFromPoint(x, y);
  while (el) {
    if (el.shadowRoot) {
      const inner = el.shadowRoot.elementFromPoint(x, y);
      if (inner && inner !== el) { el = inner; continue; }
    }
    if (el.localName === 'iframe' || el.localName === 'frame') {
      let idoc = null;
      try { idoc = el.contentDocument; } catch (e) { idoc = null; }
      if (idoc) {
        const o = frameOffset(el);
        const inner = deepHit(idoc, x - o.x, y - o.y);
        if (inner) return inner;
      }
    }
    break;
  }
  return el;
}

// Top-left of an iframe's content box, in its parent's viewport coordinates.
function frameOffset(frameEl) {
  const r = frameEl.getBoundingClientRect();
  const st = frameEl.ownerDocument.defaultView.getComputedStyle(frameEl);
  return {
    x: r.left + frameEl.clientLeft + parseFloat(st.paddingLeft || 0),
    y: r.top + frameEl.clientTop + parseFloat(st.paddingTop || 0),
  };
}

// True when `node` is `anc` or lies inside it, crossing shadow-root boundaries.
function within(anc, node) {
  while (node) {
    if (node === anc) return true;
    node = node.parentNode || node.host || null;
  }
  return false;
}

// The interactive element (as extraction lists it) whose clickable point is (x, y), from the top document.
function interactiveAt(x, y) {
  let el = deepHit(document, x, y);
  while (el && !(el.matches && el.matches(INTERACTIVE))) el = el.parentNode || el.host || null;
  const outer = el && el.parentElement ? el.parentElement.closest(CONTAINER) : null;
  return outer || el;  // the same element extraction lists: nested widgets belong to their container
}

// Structural path of an element inside its document: tag:nth-of-type or tag#stable-id per level;
// `>>` marks a step out of a shadow root to its host. Classes are ignored (they are often dynamic).
function segment(el) {
  const tag = el.localName;
  const id = el.id;
  if (id && !/\d{3,}|[0-9a-f]{8,}|^[:_]|\s/i.test(id)) return tag + '#' + id;
  let i = 1;
  for (let s = el.previousElementSibling; s; s = s.previousElementSibling) if (s.localName === tag) i++;
  return tag + ':' + i;
}

function pathOf(el) {
  const parts = [];
  let node = el;
  while (node && node.nodeType === 1) {
    parts.push(segment(node));
    if (node.parentElement) { node = node.parentElement; continue; }
    const root = node.getRootNode();
    if (root && root.host) { parts.push('>>'); node = root.host; } else break;
  }
  return parts.reverse().join('/');
}
