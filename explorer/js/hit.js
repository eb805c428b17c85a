// What interactive element is at (x, y) now: its tag and structural path (to check a mark is not stale).
function hitAt(args) {
  const el = interactiveAt(args.x, args.y);
  return el ? { tag: el.localName, path: pathOf(el) } : null;
}
