// Extract the visible, unoccluded interactive elements of the page (open shadow roots and same-origin
// iframes included), with boxes and a verified click point in top-level viewport CSS pixels.
function extract(opts) {
  const vw = window.innerWidth, vh = window.innerHeight;
  const elements = [];
  const headings = [];
  const texts = [];  // visible text blocks: what tabs, accordions and results change
  const seenText = new Set();
  const JS_NAV = /(?:location(?:\.href)?\s*=|location\.(?:assign|replace)\s*\(|window\.open\s*\()\s*['"`]([^'"`]+)['"`]/;
  const TEXT_BLOCK = /^(p|li|dd|dt|td|th|h[1-6]|blockquote|figcaption|caption)$/;

  function roleOf(el) {
    const r = el.getAttribute('role');
    if (r) return r.split(' ')[0];
    const tag = el.localName;
    if (tag === 'a') return 'link';
    if (tag === 'button' || tag === 'summary') return 'button';
    if (tag === 'select') return el.multiple ? 'listbox' : 'combobox';
    if (tag === 'textarea') return 'textbox';
    if (tag === 'input') return INPUT_ROLES[(el.type || 'text').toLowerCase()] || 'textbox';
    if (el.isContentEditable) return 'textbox';
    if (el.hasAttribute('onclick')) return 'button';
    return 'generic';
  }

  function nameOf(el) {
    const aria = clean(el.getAttribute('aria-label'));
    if (aria) return aria;
    const by = el.getAttribute('aria-labelledby');
    if (by) {
      const root = el.getRootNode();
      const t = clean(by.split(/\s+/).map(id => {
        const n = root.getElementById ? root.getElementById(id) : null;
        return n ? n.textContent : '';
      }).join(' '));
      if (t) return t;
    }
    const tag = el.localName;
    if (tag === 'input' || tag === 'select' || tag === 'textarea') {
      const type = (el.type || '').toLowerCase();
      if (['submit', 'button', 'reset'].includes(type)) return clean(el.value) || type;
      if (el.labels && el.labels.length) {
        const t = clean(Array.from(el.labels).map(l => l.innerText).join(' '));
        if (t) return t;
      }
      return clean(el.getAttribute('placeholder') || el.getAttribute('title') || el.getAttribute('name') || '');
    }
    let text = clean(el.innerText || el.textContent);
    if (!text) {  // an image-only control: its picture's alt text or label
      const pic = el.querySelector('img[alt], [aria-label], svg title');
      text = pic ? clean(pic.getAttribute('alt') || pic.getAttribute('aria-label') || pic.textContent) : '';
    }
    return text || clean(el.getAttribute('title') || '');
  }

  function valueOf(el) {
    const tag = el.localName;
    if (tag === 'select') return el.selectedOptions.length ? clean(el.selectedOptions[0].text) : '';
    if (tag === 'input') {
      const type = (el.type || '').toLowerCase();
      if (type === 'checkbox' || type === 'radio') return el.checked ? 'checked' : '';
      if (type === 'password') return el.value ? '••••' : '';
      if (['submit', 'button', 'reset', 'image'].includes(type)) return '';
      return cut(el.value || '', 100);
    }
    if (tag === 'textarea') return cut(el.value || '', 100);
    return '';
  }

  // Does activating el submit its form (a submit button, or a text field whose Enter submits)?
  function submits(el, tag) {
    if (!el.form) return false;
    if (tag === 'input') return !['checkbox', 'radio', 'button', 'reset', 'file'].includes((el.type || '').toLowerCase());
    return tag === 'button' && (el.type || 'submit') === 'submit';
  }

  // Where the page's own script sends a click, when it says so in markup: data-href/-url/-link, or an inline
  // onclick that assigns location, calls location.assign/replace or window.open with a literal URL.
  function scriptTarget(el) {
    for (const a of ['data-href', 'data-url', 'data-link']) {
      const v = el.getAttribute(a);
      if (v) return v;
    }
    const m = (el.getAttribute('onclick') || '').match(JS_NAV);
    return m ? m[1] : null;
  }

  function resolved(url) {
    try { return new URL(url, document.baseURI).href; } catch (e) { return null; }
  }

  // Where activating el leads: a submitting control's form (its formaction/formmethod over its form's,
  // resolved), else the script destination its markup shows (a GET), else nowhere known.
  function formTarget(el, tag) {
    if (!submits(el, tag)) {
      const js = scriptTarget(el);
      const target = js ? resolved(js) : null;
      return { target, method: target ? 'GET' : null };
    }
    const own = el.hasAttribute('formaction');
    const method = (el.hasAttribute('formmethod') ? el.formMethod : el.form.method) || 'get';
    return { target: own ? el.formAction : el.form.action, method: method.toUpperCase() };
  }

  function styleOk(el) {
    if (el.checkVisibility && !el.checkVisibility({ opacityProperty: true, visibilityProperty: true })) return false;
    const st = el.ownerDocument.defaultView.getComputedStyle(el);
    return st.visibility === 'visible' && st.display !== 'none' && parseFloat(st.opacity) > 0;
  }

  // Box in top-level coordinates, clipped to `clip`; null when nothing of it shows.
  function boxOf(el, off, clip) {
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) return null;
    const x = r.left + off.x, y = r.top + off.y;
    const c = {
      x0: Math.max(x, clip.x0), y0: Math.max(y, clip.y0),
      x1: Math.min(x + r.width, clip.x1), y1: Math.min(y + r.height, clip.y1),
    };
    if (c.x1 - c.x0 < 1 || c.y1 - c.y0 < 1) return null;
    return { x, y, w: r.width, h: r.height, clip: c };
  }

  // A point of the visible box where the hit test lands on `el` itself; null when it is occluded.
  function clickPoint(el, box) {
    const c = box.clip;
    for (const [fx, fy] of [[0.5, 0.5], [0.25, 0.5], [0.75, 0.5], [0.5, 0.25], [0.5, 0.75], [0.15, 0.5], [0.85, 0.5]]) {
      const px = c.x0 + (c.x1 - c.x0) * fx, py = c.y0 + (c.y1 - c.y0) * fy;
      if (within(el, deepHit(document, px, py))) return [px, py];
    }
    return null;
  }

  function visit(root, frame, off, clip) {
    for (const el of root.querySelectorAll('*')) {
      if (elements.length >= opts.maxElements) return;
      const tag = el.localName;
      if (tag === 'iframe' || tag === 'frame') {
        let idoc = null;
        try { idoc = el.contentDocument; } catch (e) { idoc = null; }
        const box = idoc && styleOk(el) ? boxOf(el, off, clip) : null;
        if (box) {
          const o = frameOffset(el);
          visit(idoc, frame.concat([pathOf(el)]), { x: off.x + o.x, y: off.y + o.y }, box.clip);
        }
        continue;
      }
      if (!frame.length && /^h[1-3]$/.test(tag) && headings.length < 12) {
        const t = cut(clean(el.innerText), 120);
        if (t && styleOk(el) && boxOf(el, off, clip)) headings.push([tag, t]);
      }
      if (TEXT_BLOCK.test(tag) && texts.length < opts.maxTexts && !el.closest(CONTAINER)) {
        const t = cut(clean(el.innerText), 100);
        if (t && !seenText.has(t) && styleOk(el) && boxOf(el, off, clip)) { seenText.add(t); texts.push(t); }
      }
      if (el.shadowRoot) visit(el.shadowRoot, frame, off, clip);
      if (!el.matches(INTERACTIVE)) continue;
      if (tag === 'input' && (el.type || '').toLowerCase() === 'hidden') continue;
      if (el.getAttribute('tabindex') === '-1' && !el.matches(INTERACTIVE.replace('[tabindex],', ''))) continue;
      if (el.parentElement && el.parentElement.closest(CONTAINER)) continue;
      if (!styleOk(el)) continue;
      const box = boxOf(el, off, clip);
      if (!box) continue;
      const point = clickPoint(el, box);
      if (!point) continue;
      elements.push({
        tag, role: roleOf(el), name: cut(nameOf(el), 100), value: valueOf(el),
        href: tag === 'a' && el.href ? el.href : null,
        input_type: tag === 'input' ? (el.type || 'text').toLowerCase() : null,
        options: tag === 'select' ? Array.from(el.options).slice(0, 30).map(o => cut(clean(o.text), 60)) : [],
        bbox: [box.x, box.y, box.w, box.h].map(v => Math.round(v * 10) / 10),
        point: point.map(v => Math.round(v * 10) / 10),
        enabled: !el.disabled && el.getAttribute('aria-disabled') !== 'true',
        submits: submits(el, tag),
        ...formTarget(el, tag),
        frame, path: pathOf(el),
      });
    }
  }

  visit(document, [], { x: 0, y: 0 }, { x0: 0, y0: 0, x1: vw, y1: vh });
  return {
    url: location.href, title: document.title, elements, texts,
    headings: headings.sort((a, b) => a[0].localeCompare(b[0])).map(h => h[1]),  // h1 first, then h2, h3
    viewport: [vw, vh], scroll: [window.scrollX, window.scrollY],
    ...volatileBoxes(opts),
  };
}
