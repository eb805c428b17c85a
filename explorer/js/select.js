// Choose an option (by visible text or value) in the <select> whose click point is (x, y).
function selectAt(args) {
  const el = interactiveAt(args.x, args.y);
  if (!el || el.localName !== 'select') return { ok: false, error: 'no <select> at the element\'s point' };
  const want = (args.option || '').trim().toLowerCase();
  const opt = Array.from(el.options).find(o => clean(o.text).toLowerCase() === want || o.value.toLowerCase() === want);
  if (!opt) return { ok: false, error: `no option "${args.option}"` };
  el.value = opt.value;
  el.dispatchEvent(new Event('input', { bubbles: true }));
  el.dispatchEvent(new Event('change', { bubbles: true }));
  return { ok: true, selected: clean(opt.text) };
}
