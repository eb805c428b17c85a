// scalehop report: draws the coverage curves and the SCALE-Hop graph from the JSON embedded in the page.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("report-data").textContent);
  const SVG_NS = "http://www.w3.org/2000/svg";
  const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"];
  const STATUS = { unexplored: "var(--unexplored)", partial: "var(--partial)", full: "var(--full)" };
  const runColor = (i) => COLORS[i % COLORS.length];

  function svg(tag, attrs, parent) {
    const el = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
    if (parent) parent.appendChild(el);
    return el;
  }
  function html(tag, text, parent) {
    const el = document.createElement(tag);
    if (text !== undefined) el.textContent = text;
    if (parent) parent.appendChild(el);
    return el;
  }

  // ---- screenshots: every <img data-shot> takes its data URL from the shared image map --------------------
  for (const img of document.querySelectorAll("img[data-shot]")) img.src = DATA.images[img.dataset.shot];

  // ---- coverage curves ------------------------------------------------------------------------------------
  const curvesSvg = document.getElementById("curves-svg");
  const readout = document.getElementById("curves-readout");
  const M = { left: 48, right: 16, top: 12, bottom: 30 }, W = 960, H = 320;
  let metric = "states";

  // About `count` round tick values from 0 to max (whole numbers unless `fractional`).
  function niceTicks(max, count, fractional) {
    const raw = max / count || 1, mag = Math.pow(10, Math.floor(Math.log10(raw)));
    let step = [1, 2, 5, 10].map((m) => m * mag).find((s) => s >= raw) || mag;
    if (!fractional) step = Math.max(1, Math.round(step));
    const ticks = [];
    for (let i = 0; i * step <= max + 1e-9; i++) ticks.push(Number((i * step).toFixed(6)));
    return ticks;
  }

  // Axes with grid lines in a W x H chart; returns the x and y scales.
  function axes(el, H, xMax, yMax, xTicks, xLabel, yFmt, fractional) {
    const x = (s) => M.left + (s / (xMax || 1)) * (W - M.left - M.right);
    const y = (v) => H - M.bottom - (v / yMax) * (H - M.top - M.bottom);
    const axis = svg("g", { class: "axis" }, el);
    for (const v of niceTicks(yMax, 5, fractional)) {
      svg("line", { x1: M.left, x2: W - M.right, y1: y(v), y2: y(v), "stroke-opacity": 0.35 }, axis);
      svg("text", { x: M.left - 6, y: y(v) + 4, "text-anchor": "end" }, axis).textContent = yFmt(v);
    }
    for (const [s, label] of xTicks) {
      svg("text", { x: x(s), y: H - M.bottom + 16, "text-anchor": "middle" }, axis).textContent = label;
    }
    svg("text", { x: W - M.right, y: H - 2, "text-anchor": "end" }, axis).textContent = xLabel;
    return { x, y };
  }

  function drawCurves() {
    curvesSvg.replaceChildren();
    const runs = DATA.runs;
    const maxStep = Math.max(1, ...runs.map((r) => r.curves[metric].length - 1));
    const maxVal = Math.max(1, ...runs.map((r) => Math.max(0, ...r.curves[metric])));
    const { x, y } = axes(curvesSvg, H, maxStep, maxVal, niceTicks(maxStep, 8).map((s) => [s, s]), "step", (v) => v);
    runs.forEach((run, i) => {
      const points = run.curves[metric].map((v, s) => `${x(s).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
      const line = svg("polyline", { points, fill: "none", stroke: runColor(i), "stroke-width": 2, "data-run": run.key }, curvesSvg);
      svg("title", {}, line).textContent = run.label;
    });
    const cursor = svg("line", { y1: M.top, y2: H - M.bottom, stroke: "#888", "stroke-dasharray": "3 3", visibility: "hidden" }, curvesSvg);
    curvesSvg.onmousemove = (ev) => {
      const box = curvesSvg.getBoundingClientRect();
      const sx = ((ev.clientX - box.left) / box.width) * W;
      const step = Math.max(0, Math.min(maxStep, Math.round(((sx - M.left) / (W - M.left - M.right)) * maxStep)));
      cursor.setAttribute("x1", x(step));
      cursor.setAttribute("x2", x(step));
      cursor.setAttribute("visibility", "visible");
      readout.replaceChildren(html("b", `step ${step}`));
      runs.forEach((run, i) => {
        const c = run.curves[metric];
        const row = html("div", `${run.label}: ${c.length ? c[Math.min(step, c.length - 1)] : 0}`, readout);
        row.style.color = runColor(i);
      });
      readout.style.display = "block";
    };
    curvesSvg.onmouseleave = () => {
      cursor.setAttribute("visibility", "hidden");
      readout.style.display = "none";
    };
    const legend = document.getElementById("curves-legend");
    legend.replaceChildren();
    runs.forEach((run, i) => {
      const c = run.curves[metric];
      const item = html("span", "", legend);
      item.dataset.run = run.key;
      item.dataset.final = c.length ? c[c.length - 1] : 0;
      html("i", undefined, item).style.background = runColor(i);
      item.append(`${run.label}: ${item.dataset.final}`);
    });
  }

  for (const button of document.querySelectorAll("#curve-metrics button")) {
    button.addEventListener("click", () => {
      metric = button.dataset.metric;
      document.querySelectorAll("#curve-metrics button").forEach((b) => b.classList.toggle("on", b === button));
      drawCurves();
    });
  }

  // ---- the SCALE-Hop graph --------------------------------------------------------------------------------
  const graphSvg = document.getElementById("graph-svg");
  const details = document.getElementById("graph-details");
  const tooltip = document.getElementById("tooltip");
  const [GW, GH] = DATA.layout;
  let view = { x: 0, y: 0, w: GW, h: GH };

  function setView() {
    graphSvg.setAttribute("viewBox", `${view.x} ${view.y} ${view.w} ${view.h}`);
  }

  function showTooltip(node, ev) {
    tooltip.replaceChildren();
    const img = html("img", undefined, tooltip);
    img.src = DATA.images[node.shot];
    img.dataset.shot = node.shot;
    html("b", node.title || "(untitled)", tooltip);
    html("div", node.url, tooltip).className = "url";
    html("div", `${node.id} · ${node.status} · visits ${node.visits} · depth ${node.depth}`, tooltip);
    tooltip.style.display = "block";
    moveTooltip(ev);
  }
  function moveTooltip(ev) {
    const left = ev.clientX + 16 + 340 > window.innerWidth ? ev.clientX - 356 : ev.clientX + 16;
    const top = Math.min(ev.clientY + 12, window.innerHeight - tooltip.offsetHeight - 8);
    tooltip.style.left = `${Math.max(4, left)}px`;
    tooltip.style.top = `${Math.max(4, top)}px`;
  }

  function showDetails(run, node, circles, lines) {
    circles.forEach((c, id) => c.classList.toggle("selected", id === node.id));
    lines.forEach((l) => l.classList.toggle("hot", l.dataset.src === node.id || l.dataset.dst === node.id));
    const byId = Object.fromEntries(run.nodes.map((n) => [n.id, n]));
    details.replaceChildren();
    html("h3", node.title || "(untitled)", details);
    const dl = html("dl", undefined, details);
    const fields = [["id", node.id], ["url", node.url], ["status", node.status], ["visits", node.visits],
      ["depth", node.depth], ["created at step", node.created_step]];
    if (node.unreachable) fields.push(["unreachable", node.unreachable]);
    for (const [k, v] of fields) { html("dt", k, dl); html("dd", String(v), dl); }
    const list = (title, edges, other) => {
      html("dt", `${title} (${edges.length})`, dl);
      const ul = html("ul", undefined, html("dd", undefined, dl));
      for (const e of edges) {
        const target = byId[other(e)];
        html("li", `${e.label} → ${target ? target.title || target.id : other(e)}${e.count > 1 ? ` ×${e.count}` : ""}`, ul);
      }
    };
    list("actions from here", run.edges.filter((e) => e.src === node.id), (e) => e.dst);
    list("actions into here", run.edges.filter((e) => e.dst === node.id), (e) => e.src);
    const failures = run.failures.filter((f) => f.node_from === node.id);
    html("dt", `failure samples from here (${failures.length})`, dl);
    const ul = html("ul", undefined, html("dd", undefined, dl));
    for (const f of failures) {
      const a = html("a", `step ${f.step}: ${f.action}`, html("li", undefined, ul));
      a.href = `#f-${run.key}-${f.id}`;
    }
  }

  function drawGraph(key) {
    const run = DATA.runs.find((r) => r.key === key);
    graphSvg.replaceChildren();
    view = { x: 0, y: 0, w: GW, h: GH };
    setView();
    graphSvg.dataset.run = key;
    const defs = svg("defs", {}, graphSvg);
    const marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, defs);
    svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#9aa3ad" }, marker);
    const pos = Object.fromEntries(run.nodes.map((n) => [n.id, n]));
    const radius = (n) => (n.created_step === 0 ? 10 : 7);
    const lines = [];
    const edgeLayer = svg("g", {}, graphSvg);
    for (const e of run.edges) {
      const a = pos[e.src], b = pos[e.dst];
      if (!a || !b || e.src === e.dst) continue;
      const dx = b.x - a.x, dy = b.y - a.y, len = Math.hypot(dx, dy) || 1;
      const line = svg("line", {
        class: "edge" + (e.wrong ? " wrong" : ""), x1: a.x, y1: a.y,
        x2: b.x - (dx / len) * (radius(b) + 2), y2: b.y - (dy / len) * (radius(b) + 2),
        "marker-end": "url(#arrow)", "data-src": e.src, "data-dst": e.dst,
      }, edgeLayer);
      svg("title", {}, line).textContent = `${e.label}${e.count > 1 ? ` (×${e.count})` : ""}`;
      lines.push(line);
    }
    const circles = new Map();
    const nodeLayer = svg("g", {}, graphSvg);
    for (const n of run.nodes) {
      const c = svg("circle", {
        class: "node" + (n.created_step === 0 ? " start" : "") + (n.unreachable ? " unreachable" : ""),
        cx: n.x, cy: n.y, r: radius(n), fill: STATUS[n.status] || "#555",
        "data-node": n.id, "data-status": n.status, "data-shot": n.shot,
      }, nodeLayer);
      c.addEventListener("mouseenter", (ev) => showTooltip(n, ev));
      c.addEventListener("mousemove", moveTooltip);
      c.addEventListener("mouseleave", () => { tooltip.style.display = "none"; });
      c.addEventListener("click", () => showDetails(run, n, circles, lines));
      circles.set(n.id, c);
    }
    details.replaceChildren(html("p", "Click a state."));
    details.firstChild.className = "note";
  }

  // zoom with the wheel around the cursor; pan by dragging
  graphSvg.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    const box = graphSvg.getBoundingClientRect();
    const fx = (ev.clientX - box.left) / box.width, fy = (ev.clientY - box.top) / box.height;
    const k = ev.deltaY > 0 ? 1.15 : 1 / 1.15;
    const w = Math.min(GW * 4, Math.max(GW / 20, view.w * k)), h = (w / view.w) * view.h;
    view = { x: view.x + fx * (view.w - w), y: view.y + fy * (view.h - h), w, h };
    setView();
  }, { passive: false });
  let drag = null;
  graphSvg.addEventListener("mousedown", (ev) => {
    if (ev.target.tagName !== "circle") drag = { x: ev.clientX, y: ev.clientY, view: { ...view } };
  });
  window.addEventListener("mousemove", (ev) => {
    if (!drag) return;
    const box = graphSvg.getBoundingClientRect();
    view = { ...drag.view, x: drag.view.x - ((ev.clientX - drag.x) / box.width) * view.w,
             y: drag.view.y - ((ev.clientY - drag.y) / box.height) * view.h };
    setView();
  });
  window.addEventListener("mouseup", () => { drag = null; });

  // ---- held-out accuracy per self-improvement round ---------------------------------------------------------
  function drawAccuracy() {
    const el = document.getElementById("accuracy-svg"), acc = DATA.accuracy;
    if (!el || !acc) return;
    const n = acc.rounds.length, AH = 240, per = acc.series.length;
    const ticks = acc.rounds.map((r, k) => [k + 0.5, `round ${r}`]);
    const { x, y } = axes(el, AH, n, 1, ticks, "", (v) => `${Math.round(v * 100)}%`, true);
    const group = x(1) - x(0), bar = Math.min(48, (group * 0.7) / per);
    const legend = document.getElementById("accuracy-legend");
    acc.series.forEach(({ name, values }, i) => {
      const color = runColor(i + 4);
      values.forEach((v, k) => {
        if (v === null) return;
        const left = x(k + 0.5) - (per * bar) / 2 + i * bar;
        const rect = svg("rect", { x: left + 2, y: y(v), width: bar - 4, height: y(0) - y(v), fill: color,
          "data-series": name, "data-round": acc.rounds[k], "data-value": v }, el);
        svg("title", {}, rect).textContent = `${name}, round ${acc.rounds[k]}: ${(v * 100).toFixed(1)}%`;
        svg("text", { x: left + bar / 2, y: y(v) - 4, "text-anchor": "middle" }, el).textContent = `${Math.round(v * 100)}%`;
      });
      const item = html("span", "", legend);
      html("i", undefined, item).style.background = color;
      item.append(name === "after" ? "after (this round's adapter)" : name === "before" ? "before (model in use)" : "base model");
    });
  }

  const runSelect = document.getElementById("graph-run");
  runSelect.addEventListener("change", () => drawGraph(runSelect.value));
  drawCurves();
  drawAccuracy();
  if (DATA.runs.length) drawGraph(DATA.runs[0].key);
})();
