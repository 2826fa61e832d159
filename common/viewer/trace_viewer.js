// The trace viewer's logic (trace_viewer.html): reads a trace (README.md in this folder has the
// format), then draws one event at a time. No library and no network: it must run from file://.
// Tested in headless Chromium by scripts/tests/test_trace_viewer.py.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const $ = (id) => document.getElementById(id);

  let trace = null;   // the loaded trace
  let current = 0;    // index of the event shown

  // ---- small helpers --------------------------------------------------------------------------

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // A state value as the trace wrote it: a number, or "inf", "-inf", "nan".
  function shown(v) {
    return typeof v === "string" ? v : String(v);
  }

  function range(a, b) {
    return a === b - 1 ? String(a) : a + ".." + (b - 1);
  }

  // "K[96:112, 0:64]": the elements a tile covers, past the tensor's edge included.
  function sliceText(name, offsets, block) {
    return name + "[" + offsets.map((o, k) => o + ":" + (o + block[k])).join(", ") + "]";
  }

  function fail(message) {
    const e = $("error");
    e.textContent = message;
    e.hidden = false;
  }

  // ---- reading a trace ------------------------------------------------------------------------

  function check(t) {
    if (!t || typeof t !== "object") throw new Error("the file holds no JSON object");
    if (typeof t.format !== "string" || !t.format.startsWith("fa2-trace ")) {
      throw new Error("its format is '" + t.format + "', not an fa2-trace (write one with a demo's --trace)");
    }
    if (t.view !== "attention" && t.view !== "tensor") throw new Error("unknown view '" + t.view + "'");
    if (!Array.isArray(t.events) || t.events.length === 0) throw new Error("the trace has no events");
    for (const [i, e] of t.events.entries()) {
      if (!["load", "store", "state", "key_tile"].includes(e.kind)) {
        throw new Error("event " + (i + 1) + " has an unknown kind '" + e.kind + "'");
      }
    }
    return t;
  }

  function show(t, name) {
    try {
      trace = check(t);
    } catch (err) {
      fail((name ? name + ": " : "") + err.message);
      return;
    }
    $("error").hidden = true;
    $("viewer").hidden = false;
    $("trace-title").textContent = trace.title;
    $("trace-source").textContent = "Written by " + trace.source + (name ? " (" + name + ")" : "");
    $("problem").textContent = describeProblem(trace);
    const notes = $("trace-notes");
    notes.replaceChildren(...(trace.notes || []).map((n) => el("li", {}, n)));
    const slider = $("slider");
    slider.max = String(trace.events.length);
    const list = $("event-list");
    list.replaceChildren(...trace.events.map((e, i) => {
      const li = el("li", { "data-index": String(i) }, describeEvent(e));
      li.addEventListener("click", () => go(i));
      return li;
    }));
    $("state-panel").hidden = trace.view !== "attention";
    go(0);
  }

  function describeProblem(t) {
    const p = t.problem, tiles = t.tiles;
    if (t.view === "tensor") {
      return "x: " + p.rows + " x " + p.cols + ", " + p.layout + "; tiles " + tiles.tile_rows + " x " +
        tiles.tile_cols + "; padding " + p.padding + ".";
    }
    return "(batch, N_q, N_k, D) = (" + [p.batch, p.n_queries, p.n_keys, p.head_dim].join(", ") + "), " +
      p.dtype + ", " + (p.causal ? "causal" : "non-causal") + "; tiles " + tiles.q_tile + " x " + tiles.k_tile +
      ": " + tiles.n_query_tiles + " query tiles x " + tiles.n_key_tiles + " key tiles.";
  }

  function describeEvent(e) {
    if (e.kind === "load" || e.kind === "store") {
      const where = e.place === "shared" ? "shared memory" : "registers";
      return e.kind === "load"
        ? "load " + sliceText(e.tensor || "?", e.offsets, e.block) + " into " + where
        : "store " + sliceText(e.tensor || "?", e.offsets, e.block) + " from " + where;
    }
    if (e.kind === "key_tile") {
      return "scores S_ij of queries " + range(e.q_start, e.q_start + e.rows) + " and keys " +
        range(e.k_start, e.k_start + e.cols);
    }
    return "state after key tile " + e.key_tile + ": m_i, l_i, alpha of rows " + range(e.first_row, e.first_row + e.m.length);
  }

  // The text of #current-tile (the test reads it back): the elements the event is about.
  function tileText(e) {
    if (e.kind === "load" || e.kind === "store") return sliceText(e.tensor || "?", e.offsets, e.block);
    if (e.kind === "key_tile") return "S[" + e.q_start + ":" + (e.q_start + e.rows) + ", " + e.k_start + ":" +
      (e.k_start + e.cols) + "]";
    return "rows " + e.first_row + ":" + (e.first_row + e.m.length) + " after key tile " + e.key_tile;
  }

  // ---- one event ------------------------------------------------------------------------------

  function go(i) {
    if (!trace) return;
    current = Math.max(0, Math.min(trace.events.length - 1, i));
    const e = trace.events[current];
    $("slider").value = String(current + 1);
    $("position").textContent = "event " + (current + 1) + " of " + trace.events.length;
    $("current-event").textContent = "Event " + (current + 1) + ": " + describeEvent(e) + ".";
    const tile = $("current-tile");
    tile.textContent = tileText(e);
    tile.dataset.kind = e.kind;
    tile.dataset.tensor = e.tensor || "";
    tile.dataset.tile = (e.tile || []).join(",");
    $("current-place").textContent = e.place ? "(" + e.place + ")" : "";
    for (const li of $("event-list").children) li.classList.toggle("current", Number(li.dataset.index) === current);
    $("back").disabled = current === 0;
    $("first").disabled = current === 0;
    $("forward").disabled = current === trace.events.length - 1;
    $("last").disabled = current === trace.events.length - 1;
    drawMask();
    if (trace.view === "attention") {
      drawAttentionGrid();
      drawState();
    } else {
      drawTensor();
    }
  }

  // The latest event at or before the current one that satisfies `test`, or null.
  function latest(test) {
    for (let i = current; i >= 0; --i) if (test(trace.events[i])) return trace.events[i];
    return null;
  }

  const hasMask = (e) => Array.isArray(e.mask);

  function drawMask() {
    const box = $("mask");
    const e = latest(hasMask);
    if (!e) {
      box.replaceChildren();
      $("mask-summary").textContent = "No tile read yet.";
      return;
    }
    const rows = e.mask.length, cols = e.mask[0].length;
    const cell = Math.max(4, Math.min(22, Math.floor(380 / cols) - 1));
    const grid = el("div", { class: "mask-grid" });
    grid.style.gridTemplateColumns = "repeat(" + cols + ", " + cell + "px)";
    let inside = 0;
    const paddedRows = [];
    e.mask.forEach((row, r) => {
      if (!row.includes("1")) paddedRows.push(r);
      for (let c = 0; c < cols; ++c) {
        const on = row[c] === "1";
        inside += on ? 1 : 0;
        const d = el("div", { class: "m " + (on ? "in" : "out"), "data-row": String(r), "data-col": String(c) });
        d.style.height = cell + "px";
        grid.appendChild(d);
      }
    });
    box.replaceChildren(grid);
    const which = e === trace.events[current] ? "" : "The last tile read, ";
    let text;
    if (e.kind === "key_tile") {
      text = which + "S_ij, " + rows + " x " + cols + ": " + inside + " of " + rows * cols + " scores count";
      $("mask-in-legend").textContent = "the score counts";
      $("mask-out-legend").textContent = "masked: -inf, the key comes after the query (causal)";
    } else {
      text = which + tileText(e) + ": " + inside + " of " + rows * cols + " elements inside";
      // Whole rows and columns of the tile past the tensor's edge (a 2-D tile).
      const pastCols = [];
      for (let c = 0; c < cols && e.block.length === 2; ++c) if (e.mask.every((row) => row[c] === "0")) pastCols.push(c);
      const past = (list, start, axis, extent) => list.length === 0 || list.length === (axis === 0 ? rows : cols) ? ""
        : "; " + (axis === 0 ? "row" : "column") + (list.length > 1 ? "s " : " ") +
          range(start + list[0], start + list[list.length - 1] + 1) + (list.length > 1 ? " lie" : " lies") +
          " past its " + extent + (axis === 0 ? " rows" : " columns");
      text += past(paddedRows, e.offsets[0], 0, e.shape[0]);
      if (e.block.length === 2) text += past(pastCols, e.offsets[1], 1, e.shape[1]);
      $("mask-in-legend").textContent = "inside the tensor: " + (e.kind === "load" ? "read" : "written");
      $("mask-out-legend").textContent = e.kind === "load"
        ? "masked: never read, the tile gets the padding (" + e.padding + ")" : "masked: never written";
    }
    $("mask-summary").textContent = text + ".";
    $("mask-summary").dataset.inside = String(inside);
  }

  // ---- the attention view: query tiles x key tiles ---------------------------------------------

  function drawAttentionGrid() {
    const p = trace.problem, t = trace.tiles;
    const nq = t.n_query_tiles, nk = t.n_key_tiles;
    const programTile = trace.program.query_tile;  // undefined for step 2: every query tile in turn
    const e = trace.events[current];
    // The (query tile, key tile) cell of this event, if it has one.
    let cur = null;
    if (e.kind === "key_tile") cur = [Math.floor(e.q_start / t.q_tile), Math.floor(e.k_start / t.k_tile)];
    if (e.kind === "state") cur = [Math.floor(e.first_row / t.q_tile), e.key_tile];
    if ((e.kind === "load" || e.kind === "store") && (e.tensor === "K" || e.tensor === "V")) {
      cur = [programTile, e.tile[0]];
    }
    const qHeader = (e.kind === "load" || e.kind === "store") && ["Q", "O", "L"].includes(e.tensor);
    const done = new Set();
    for (let i = 0; i <= current; ++i) {
      const s = trace.events[i];
      if (s.kind === "state") done.add(Math.floor(s.first_row / t.q_tile) + "," + s.key_tile);
    }

    const cw = Math.max(30, Math.min(54, Math.floor(380 / nk))), ch = Math.max(20, Math.min(32, Math.floor(260 / nq)));
    const left = 92, top = 40;
    const root = svg("svg", { width: left + nk * cw + 8, height: top + nq * ch + 8, role: "img" });
    root.appendChild(svg("text", { x: left, y: 12, class: "axis" }, "key tiles j (K_j, V_j) \u2192"));
    for (let j = 0; j < nk; ++j) {
      const k0 = j * t.k_tile, k1 = Math.min(k0 + t.k_tile, p.n_keys);
      const head = svg("text", { x: left + j * cw + cw / 2, y: top - 8, class: "head" + (cur && cur[1] === j ? " now" : ""),
        "text-anchor": "middle" }, String(j));
      head.appendChild(svg("title", {}, "keys " + range(k0, k1) + (k0 + t.k_tile > p.n_keys ? " (and " +
        (k0 + t.k_tile - p.n_keys) + " padded)" : "")));
      root.appendChild(head);
    }
    for (let i = 0; i < nq; ++i) {
      const q0 = i * t.q_tile, q1 = Math.min(q0 + t.q_tile, p.n_queries);
      const label = svg("text", { x: left - 6, y: top + i * ch + ch / 2 + 4, "text-anchor": "end",
        class: "head" + ((cur && cur[0] === i) || (qHeader && i === programTile) ? " now" : "") }, "Q " + range(q0, q1));
      root.appendChild(label);
      for (let j = 0; j < nk; ++j) {
        const k0 = j * t.k_tile;
        const classes = ["cell"];
        if (programTile !== undefined && i === programTile) classes.push("program");
        if (done.has(i + "," + j)) classes.push("done");
        if (p.causal && k0 > q1 - 1) classes.push("all-masked");
        if (cur && cur[0] === i && cur[1] === j) classes.push("now");
        const r = svg("rect", { x: left + j * cw + 1, y: top + i * ch + 1, width: cw - 2, height: ch - 2,
          class: classes.join(" "), "data-q-tile": i, "data-k-tile": j });
        r.appendChild(svg("title", {}, "query tile " + i + ", key tile " + j));
        root.appendChild(r);
      }
    }
    $("grid").replaceChildren(root);
    $("grid-title").textContent = programTile !== undefined
      ? "Query tiles x key tiles: program (" + programTile + ", " + trace.program.batch + ")"
      : "Query tiles x key tiles: the outer loop visits every query tile";
    $("grid-legend").textContent = "Filled: key tiles folded into the state so far. Outlined: this event's tile." +
      (programTile !== undefined ? " The program's own row is tinted: it keeps Q_i and walks the key tiles." : "") +
      (p.causal ? " Grey: every key of the tile comes after every query of the row (causal)." : "");
  }

  function drawState() {
    const s = latest((e) => e.kind === "state");
    const t = trace.tiles, p = trace.problem;
    // Before the first key tile the rows hold the kernel's starting state: m_i = -inf, l_i = 0.
    const programTile = trace.program.query_tile;
    const first = s ? s.first_row : (programTile || 0) * t.q_tile;
    // A program holds whole tiles (padded rows included); step 2's last tile is just shorter.
    const n = s ? s.m.length : (programTile !== undefined ? t.q_tile : Math.min(t.q_tile, p.n_queries - first));
    const m = s ? s.m : Array(n).fill("-inf"), l = s ? s.l : Array(n).fill(0), alpha = s ? s.alpha : Array(n).fill("");
    // The keys the state has seen last: step 2's key_tile event says how many (a causal loop stops
    // early); a kernel's tile covers K_TILE keys, those past N_k masked.
    let keys = "";
    if (s) {
      const k0 = s.key_tile * t.k_tile;
      const scores = latest((e) => e.kind === "key_tile");
      const k1 = scores && scores.k_start === k0 ? k0 + scores.cols : Math.min(k0 + t.k_tile, p.n_keys);
      keys = " (keys " + range(k0, k1) + ")";
    }
    $("state-label").textContent = s
      ? "After key tile " + s.key_tile + keys + ", rows " + range(s.first_row, s.first_row + n) + ":"
      : "Before the first key tile: every row starts at m_i = -inf, l_i = 0.";
    $("state-label").dataset.keyTile = s ? String(s.key_tile) : "";
    const column = (id, head, values, cls) => {
      const col = $(id);
      col.replaceChildren(el("div", { class: "head" }, head), ...values.map((v, r) => {
        const d = el("div", { class: "v " + cls, "data-row": String(first + r) }, shown(v));
        if (first + r >= p.n_queries) d.classList.add("padded");
        if (s && typeof alpha[r] === "number" && alpha[r] < 1) d.classList.add("moved");
        return d;
      }));
    };
    column("row-ids", "row", m.map((_, r) => first + r), "row");
    column("m-values", "m_i", m, "m");
    column("l-values", "l_i", l, "l");
    column("alpha-values", "alpha", alpha, "alpha");
  }

  // ---- the tensor view (step 3): one tensor, the tile over it ----------------------------------

  function drawTensor() {
    const e = latest((x) => x.kind === "load" || x.kind === "store");
    if (!e) return;
    const [rows, cols] = e.shape, [r0, c0] = e.offsets, [br, bc] = e.block;
    const R = Math.max(rows, r0 + br), C = Math.max(cols, c0 + bc);
    const cw = Math.max(20, Math.min(40, Math.floor(520 / C))), ch = 24, left = 30, top = 22;
    const root = svg("svg", { width: left + C * cw + 8, height: top + R * ch + 8, role: "img" });
    // Cells already loaded by an earlier event (or this one), inside the tensor.
    const seen = new Set();
    for (let i = 0; i <= current; ++i) {
      const a = trace.events[i];
      if (a.kind !== "load") continue;
      a.mask.forEach((row, r) => [...row].forEach((bit, c) => {
        if (bit === "1") seen.add((a.offsets[0] + r) + "," + (a.offsets[1] + c));
      }));
    }
    for (let c = 0; c < C; ++c) root.appendChild(svg("text", { x: left + c * cw + cw / 2, y: 14, "text-anchor": "middle",
      class: "axis" }, String(c)));
    for (let r = 0; r < R; ++r) {
      root.appendChild(svg("text", { x: left - 6, y: top + r * ch + 16, "text-anchor": "end", class: "axis" }, String(r)));
      for (let c = 0; c < C; ++c) {
        const inside = r < rows && c < cols;
        const inTile = r >= r0 && r < r0 + br && c >= c0 && c < c0 + bc;
        if (!inside && !inTile) continue;
        const classes = ["tcell", inside ? "inside" : "outside"];
        if (seen.has(r + "," + c)) classes.push("seen");
        if (inTile) classes.push("in-tile");
        root.appendChild(svg("rect", { x: left + c * cw + 1, y: top + r * ch + 1, width: cw - 2, height: ch - 2,
          class: classes.join(" "), "data-row": r, "data-col": c }));
        // Memory slot k holds the value k: the element's offset from the strides.
        const label = inside ? String(r * e.strides[0] + c * e.strides[1]) : "--";
        root.appendChild(svg("text", { x: left + c * cw + cw / 2, y: top + r * ch + 16, "text-anchor": "middle",
          class: "val" }, label));
      }
    }
    root.appendChild(svg("rect", { x: left + c0 * cw, y: top + r0 * ch, width: bc * cw, height: br * ch, class: "tile-outline" }));
    $("grid").replaceChildren(root);
    $("grid-title").textContent = "Tensor " + (e.tensor || "?") + ", " + rows + " x " + cols + ", with the tile";
    $("grid-legend").textContent = "Outlined: the tile of this event. Shaded: elements loaded so far. " +
      "--: tile cells past the edge of the tensor. Numbers: each element's offset in memory (x holds k in slot k).";
  }

  // ---- controls -------------------------------------------------------------------------------

  function loadShipped(file) {
    const shipped = (window.FA2_SHIPPED_TRACES || []).find((s) => s.file === file);
    if (!shipped) {
      fail("no shipped trace named '" + file + "'");
      return;
    }
    $("trace-select").value = file;
    show(shipped.trace, file);
  }

  function init() {
    const select = $("trace-select");
    for (const s of window.FA2_SHIPPED_TRACES || []) {
      select.appendChild(el("option", { value: s.file }, s.file + ": " + s.trace.title));
    }
    select.addEventListener("change", () => {
      if (select.value) loadShipped(select.value);
    });
    $("trace-file").addEventListener("change", (ev) => {
      const file = ev.target.files[0];
      if (!file) return;
      const reader = new FileReader();
      reader.onload = () => {
        let parsed;
        try {
          parsed = JSON.parse(reader.result);
        } catch (err) {
          fail(file.name + " is not JSON: " + err.message);
          return;
        }
        select.value = "";
        show(parsed, file.name);
      };
      reader.onerror = () => fail("cannot read " + file.name);
      reader.readAsText(file);
    });
    $("first").addEventListener("click", () => go(0));
    $("back").addEventListener("click", () => go(current - 1));
    $("forward").addEventListener("click", () => go(current + 1));
    $("last").addEventListener("click", () => go(trace ? trace.events.length - 1 : 0));
    $("slider").addEventListener("input", (ev) => go(Number(ev.target.value) - 1));
    document.addEventListener("keydown", (ev) => {
      // The slider and the list move with the arrows by themselves.
      if (!trace || ev.target instanceof HTMLInputElement || ev.target instanceof HTMLSelectElement) return;
      const moves = { ArrowRight: current + 1, ArrowLeft: current - 1, Home: 0, End: trace.events.length - 1 };
      if (ev.key in moves) {
        ev.preventDefault();
        go(moves[ev.key]);
      }
    });
    // ?trace=<file>&event=<n>: open a shipped trace at event n (1-based), e.g. from a README link.
    const params = new URLSearchParams(window.location.search);
    if (params.get("trace")) {
      loadShipped(params.get("trace"));
      if (trace && params.get("event")) go(Number(params.get("event")) - 1);
    }
  }

  init();
})();
