/* Shared, framework-free page behaviour: tabs, dialogs, toggles, dropdown menus, choice chips. */
(function () {
  function all(sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); }

  all('[data-tabs]').forEach(function (box) {
    var tabs = all('[data-tab]', box);
    tabs.forEach(function (tab) {
      tab.addEventListener('click', function () {
        tabs.forEach(function (t) {
          var on = t === tab;
          t.setAttribute('aria-selected', on ? 'true' : 'false');
          t.classList.toggle('active', on);
          var panel = box.querySelector('[data-panel="' + t.getAttribute('data-tab') + '"]');
          if (panel) { panel.hidden = !on; }
        });
      });
    });
  });

  all('[data-open]').forEach(function (btn) {
    btn.addEventListener('click', function () {
      var dlg = document.getElementById(btn.getAttribute('data-open'));
      if (!dlg) { return; }
      var action = btn.getAttribute('data-action');
      var form = dlg.querySelector('form');
      if (action && form) { form.setAttribute('action', action); }
      var label = btn.getAttribute('data-label');
      if (label) { all('[data-slot]', dlg).forEach(function (el) { el.textContent = label; }); }
      if (dlg.showModal) { dlg.showModal(); } else { dlg.setAttribute('open', ''); }
      var first = dlg.querySelector('textarea, input:not([type=hidden]):not([type=radio]), select');
      if (first) { first.focus(); }
    });
  });
  all('[data-close]').forEach(function (btn) {
    btn.addEventListener('click', function () {
      var dlg = btn.closest('dialog');
      if (dlg) { dlg.close(); }
    });
  });
  all('dialog').forEach(function (dlg) {
    dlg.addEventListener('click', function (e) { if (e.target === dlg) { dlg.close(); } });
    if (dlg.hasAttribute('data-autoopen') && dlg.showModal) { dlg.showModal(); }
  });

  all('[data-toggle]').forEach(function (btn) {
    btn.addEventListener('click', function (e) {
      e.stopPropagation();
      var target = document.getElementById(btn.getAttribute('data-toggle'));
      if (!target) { return; }
      var opening = target.hidden;
      target.hidden = !opening;
      btn.setAttribute('aria-expanded', opening ? 'true' : 'false');
      var alt = btn.getAttribute('data-alt');
      if (alt) { btn.setAttribute('data-alt', btn.textContent); btn.textContent = alt; }
    });
  });
  function closeMenus(except) {
    all('[data-menu]').forEach(function (menu) {
      if (menu === except || menu.hidden) { return; }
      menu.hidden = true;
      var b = document.querySelector('[data-toggle="' + menu.id + '"]');
      if (b) { b.setAttribute('aria-expanded', 'false'); }
    });
  }
  document.addEventListener('click', function (e) {
    var inside = e.target.closest ? e.target.closest('[data-menu]') : null;
    closeMenus(inside);
  });
  document.addEventListener('keydown', function (e) { if (e.key === 'Escape') { closeMenus(null); } });

  all('[data-choices]').forEach(function (group) {
    var label = group.querySelector('[data-choice-label]');
    var buttons = all('[data-choice]', group);
    buttons.forEach(function (b) {
      b.addEventListener('click', function () {
        buttons.forEach(function (o) { o.setAttribute('aria-pressed', o === b ? 'true' : 'false'); });
        if (label) { label.textContent = b.getAttribute('data-choice'); }
      });
    });
  });

  all('[data-like]').forEach(function (btn) {
    btn.addEventListener('click', function () {
      var on = btn.getAttribute('aria-pressed') !== 'true';
      var count = btn.querySelector('[data-count]');
      btn.setAttribute('aria-pressed', on ? 'true' : 'false');
      if (count) { count.textContent = String(Number(count.textContent) + (on ? 1 : -1)); }
    });
  });

  // Relative times, the way forums show them: <time datetime=... data-ago> says how long ago, and ticks.
  function ago(ms) {
    var s = Math.max(0, Math.round(ms / 1000));
    if (s < 5) { return 'just now'; }
    if (s < 60) { return s + ' seconds ago'; }
    var m = Math.floor(s / 60);
    if (m < 60) { return m === 1 ? '1 minute ago' : m + ' minutes ago'; }
    var h = Math.floor(m / 60);
    return h === 1 ? '1 hour ago' : h + ' hours ago';
  }
  var stamps = all('time[data-ago]');
  function tick() {
    stamps.forEach(function (t) { t.textContent = ago(Date.now() - Date.parse(t.getAttribute('datetime'))); });
  }
  if (stamps.length) { tick(); setInterval(tick, 1000); }
})();
