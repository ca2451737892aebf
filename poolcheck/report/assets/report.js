/* poolcheck HTML report: renders the embedded poolcheck.result/2 document with vanilla JS.
 * No network, no libraries. Inlined into report.html by poolcheck/report/html.py. */
(function () {
  "use strict";

  var VERDICTS = ["error", "fail", "crash", "timeout", "rejects", "erratum", "skip", "pass"];
  var SVGNS = "http://www.w3.org/2000/svg";
  var MAX_GRID = 32;      // value grids larger than this (per side) show only the heatmap
  var MAX_WINDOW_SPAN = 24; // padded axes longer than this are cropped around the window
  var MAX_WINDOW_TAPS = 4096; // a window with more taps is described, not drawn
  var PAD_FILL = "#eaeef2", OVERHANG_FILL = "#ffe1e1", CHOSEN_FILL = "#ffd27f";

  var result = JSON.parse(document.getElementById("poolcheck-result").textContent);
  var cases = result.cases || [];
  var state = { verdicts: {}, runner: "", query: "" };

  // ------------------------------------------------------------------ small helpers
  function el(tag, attrs) {
    var node = document.createElement(tag);
    setAttrs(node, attrs);
    for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }
  function sv(tag, attrs) {
    var node = document.createElementNS(SVGNS, tag);
    setAttrs(node, attrs);
    for (var i = 2; i < arguments.length; i++) append(node, arguments[i]);
    return node;
  }
  function setAttrs(node, attrs) {
    if (!attrs) return;
    Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) return;
      if (k === "text") node.textContent = visible(v);
      else if (k.slice(0, 2) === "on") node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? "" : String(v));
    });
  }
  function append(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) { child.forEach(function (c) { append(node, c); }); return; }
    node.appendChild(typeof child === "object" ? child : document.createTextNode(visible(child)));
  }
  // User text is data: control characters (ESC, C1, bidirectional overrides ...) are shown
  // escaped, never interpreted (the set of poolcheck/report/text.py).
  function visible(v) {
    return String(v).replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g, function (ch) {
      var h = ch.charCodeAt(0).toString(16);
      return ch.charCodeAt(0) < 256 ? "\\x" + ("0" + h).slice(-2) : "\\u" + ("000" + h).slice(-4);
    });
  }
  function badge(verdict) { return el("span", { "class": "badge v-" + verdict, text: verdict }); }
  function pos(p) { return p === null || p === undefined ? "shape" : "(" + p.join(", ") + ")"; }
  function isNum(v) { return typeof v === "number" || v === "nan" || v === "inf" || v === "-inf"; }
  function num(v) {
    if (v === "nan") return NaN;
    if (v === "inf") return Infinity;
    if (v === "-inf") return -Infinity;
    return typeof v === "number" ? v : NaN;
  }
  function fmt(v) {
    if (v === null || v === undefined) return "–";
    if (v === "nan") return "NaN";
    if (v === "inf") return "∞";
    if (v === "-inf") return "-∞";
    if (typeof v !== "number") return String(v);
    if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
    var s = v.toPrecision(5);
    if (s.indexOf("e") < 0 && s.indexOf(".") >= 0) s = s.replace(/0+$/, "").replace(/\.$/, "");
    return s;
  }
  // Short form for window cells (3 significant digits).
  function fmtShort(v) {
    if (typeof v !== "number" || (Number.isInteger(v) && Math.abs(v) < 1e6)) return fmt(v);
    var s = v.toPrecision(3);
    if (s.indexOf("e") < 0 && s.indexOf(".") >= 0) s = s.replace(/0+$/, "").replace(/\.$/, "");
    return s;
  }
  function same(a, b) {
    var x = num(a), y = num(b);
    if (isNaN(x) && isNaN(y)) return true;
    return x === y;
  }
  function shapeOf(t) {
    var s = [];
    while (Array.isArray(t)) { s.push(t.length); t = t[0]; }
    return s;
  }
  function at(t, idx) {
    for (var i = 0; i < idx.length; i++) {
      if (!Array.isArray(t) || idx[i] < 0 || idx[i] >= t.length) return undefined;
      t = t[idx[i]];
    }
    return t;
  }
  function range(n) { var r = []; for (var i = 0; i < n; i++) r.push(i); return r; }
  function product(lists) {
    var out = [[]];
    lists.forEach(function (list) {
      var next = [];
      out.forEach(function (prefix) { list.forEach(function (x) { next.push(prefix.concat([x])); }); });
      out = next;
    });
    return out;
  }
  function runnersOf() {
    var names = [];
    cases.forEach(function (c) {
      (c.checks || []).forEach(function (k) { if (names.indexOf(k.runner) < 0) names.push(k.runner); });
    });
    return names;
  }

  // The machines a result was made on: extra.fingerprints, id -> fingerprint, in every result
  // (poolcheck.results.machines; the model writes it beside a run's own extra.fingerprint).
  function machines() {
    var extra = result.extra || {};
    var prints = extra.fingerprints ? Object.values(extra.fingerprints) : (extra.fingerprint ? [extra.fingerprint] : []);
    return prints.filter(function (fp) { return fp && fp.host; }).map(function (fp) {
      var isa = fp.isa || [];
      return fp.host + " (" + (fp.cpu || "?") + ", " + (isa.length ? isa[isa.length - 1] : (fp.machine || "?")) + ")";
    });
  }

  // ------------------------------------------------------------------ header and summary
  function renderHeader() {
    var h = document.getElementById("header");
    var counts = result.counts || {};
    var meta = el("div", { "class": "meta" },
      el("span", null, "command ", el("code", { text: result.command || "" })),
      result.created ? el("span", { text: "created " + result.created }) : null,
      Object.keys(result.versions || {}).map(function (k) { return el("span", { text: k + " " + result.versions[k] }); }),
      machines().map(function (m) { return el("span", { "class": "machine", text: "machine " + m }); }));
    append(h, [el("h1", { text: "poolcheck " + (result.kind || "run") + " report" }), meta]);
    if (result.interrupted) {
      append(h, el("div", { "class": "banner", id: "interrupted", text: "Interrupted: this is a partial result; not every case ran." }));
    }
    var chips = el("div", { "class": "chips", id: "verdict-chips" },
      el("span", { id: "total-count", "data-count": cases.length, text: cases.length + " case(s):" }));
    VERDICTS.forEach(function (v) {
      var n = counts[v] || 0;
      chips.appendChild(el("button", {
        "class": "chip v-" + v + (n ? "" : " zero"), type: "button", "data-verdict": v, "data-count": n,
        id: "count-" + v, title: "show only " + v + " (click again to clear)",
        onclick: function () { toggleVerdict(v); }
      }, v, el("b", { text: String(n) })));
    });
    append(h, chips);
  }

  function renderRunnerTable() {
    var runners = runnersOf();
    var host = document.getElementById("runners");
    if (!runners.length) { host.appendChild(el("p", { "class": "note", text: "No runner checks in this result." })); return; }
    var present = VERDICTS.filter(function (v) {
      return cases.some(function (c) { return (c.checks || []).some(function (k) { return k.verdict === v; }); });
    });
    var head = el("tr", null, el("th", { text: "runner" }), el("th", { text: "kind" }),
      present.map(function (v) { return el("th", null, badge(v)); }));
    var rows = runners.map(function (r) {
      var kind = "", version = "";
      var cells = present.map(function (v) {
        var n = 0;
        cases.forEach(function (c) {
          (c.checks || []).forEach(function (k) {
            if (k.runner !== r) return;
            kind = k.kind; version = k.version || version;
            if (k.verdict === v) n++;
          });
        });
        var td = el("td", { "class": "num", "data-runner": r, "data-verdict": v, "data-count": n });
        if (n) {
          td.appendChild(el("button", { "class": "cellbtn", type: "button", text: String(n),
            title: "show " + r + " " + v, onclick: function () { setFilter(r, v); } }));
        } else td.textContent = "0";
        return td;
      });
      return el("tr", { "data-runner": r }, el("th", { text: r + (version ? " " + version : "") }), el("td", { text: kind }), cells);
    });
    host.appendChild(el("table", { "class": "grid-table", id: "runner-table" }, el("thead", null, head), el("tbody", null, rows)));
  }

  function renderControls() {
    var runners = runnersOf();
    var host = document.getElementById("controls");
    var verdictSel = el("select", { id: "verdict-filter", "aria-label": "verdict", onchange: function (e) {
      state.verdicts = {};
      if (e.target.value) state.verdicts[e.target.value] = true;
      applyFilters();
    } }, el("option", { value: "", text: "all verdicts" }), VERDICTS.map(function (v) { return el("option", { value: v, text: v }); }));
    var runnerSel = el("select", { id: "runner-filter", "aria-label": "runner", onchange: function (e) {
      state.runner = e.target.value; applyFilters();
    } }, el("option", { value: "", text: "all runners" }), runners.map(function (r) { return el("option", { value: r, text: r }); }));
    var search = el("input", { type: "search", id: "search", placeholder: "search id, op, message, source…",
      oninput: function (e) { state.query = e.target.value.toLowerCase(); applyFilters(); } });
    append(host, [el("label", null, "verdict ", verdictSel), el("label", null, "runner ", runnerSel), search,
      el("button", { type: "button", "class": "small", id: "clear-filters", text: "clear", onclick: function () { setFilter("", ""); } }),
      el("span", { id: "shown-count", "class": "note" })]);
  }

  function toggleVerdict(v) {
    var only = Object.keys(state.verdicts);
    state.verdicts = {};
    if (!(only.length === 1 && only[0] === v)) state.verdicts[v] = true;
    applyFilters();
  }
  function setFilter(runner, verdict) {
    state.runner = runner; state.verdicts = {};
    if (verdict) state.verdicts[verdict] = true;
    if (!runner && !verdict) { state.query = ""; document.getElementById("search").value = ""; }
    applyFilters();
  }

  // ------------------------------------------------------------------ filtering
  function haystack(c) {
    var parts = [c.case_id, c.title, c.op, c.convention, c.source, c.message, c.dtype].concat(c.tags || []);
    (c.checks || []).forEach(function (k) { parts.push(k.runner, k.message, k.diagnosis || ""); });
    if (c.erratum) parts.push(c.erratum.says, c.erratum.why);
    return parts.join("\n").toLowerCase();
  }
  function matches(c) {
    var wanted = Object.keys(state.verdicts);
    var verdict = c.verdict;
    if (state.runner) {
      var check = (c.checks || []).filter(function (k) { return k.runner === state.runner; })[0];
      if (!check) return false;
      verdict = check.verdict;
    }
    if (wanted.length && !state.verdicts[verdict]) return false;
    if (state.query && c._hay.indexOf(state.query) < 0) return false;
    return true;
  }
  function applyFilters() {
    var shown = 0;
    cases.forEach(function (c) {
      var ok = matches(c);
      c._node.hidden = !ok;
      if (ok) shown++;
    });
    var wanted = Object.keys(state.verdicts);
    document.getElementById("verdict-filter").value = wanted.length === 1 ? wanted[0] : "";
    document.getElementById("runner-filter").value = state.runner;
    Array.prototype.forEach.call(document.querySelectorAll("#verdict-chips .chip"), function (b) {
      b.classList.toggle("active", !!state.verdicts[b.getAttribute("data-verdict")]);
    });
    var sc = document.getElementById("shown-count");
    sc.textContent = shown + " of " + cases.length + " case(s) shown";
    sc.setAttribute("data-shown", shown);
    document.getElementById("no-match").hidden = shown > 0 || cases.length === 0;
  }

  // ------------------------------------------------------------------ case list
  function renderCases() {
    var host = document.getElementById("cases");
    if (!cases.length) { host.appendChild(el("p", { "class": "empty", text: "This result holds no cases." })); }
    cases.forEach(function (c, i) {
      c._hay = haystack(c);
      var body = el("div", { "class": "case-body" });
      var node = el("details", { "class": "case v-" + c.verdict, id: "case-" + i, "data-case-id": c.case_id, "data-verdict": c.verdict },
        el("summary", null, badge(c.verdict), el("span", { "class": "cid", text: c.case_id }),
          c.op ? el("span", { "class": "mono", text: c.op }) : null,
          c.title ? el("span", { "class": "title", text: c.title }) : null,
          el("span", { "class": "runners" }, (c.checks || []).map(function (k) {
            return el("span", { "class": "badge v-" + k.verdict, title: k.runner + ": " + k.verdict, text: k.runner });
          }))),
        body);
      node.addEventListener("toggle", function () {
        if (node.open && !body.firstChild) renderCaseBody(c, body);
      });
      c._node = node;
      host.appendChild(node);
    });
    host.appendChild(el("p", { "class": "empty", id: "no-match", hidden: true, text: "No case matches the filters." }));
  }

  function kv(pairs) {
    var dl = el("dl", { "class": "kv" });
    pairs.forEach(function (p) { if (p[1] !== null && p[1] !== undefined && p[1] !== "") append(dl, [el("dt", { text: p[0] }), el("dd", null, p[1])]); });
    return dl;
  }

  function specText(spec) {
    return Object.keys(spec || {}).filter(function (k) { return k !== "op"; }).map(function (k) {
      var v = spec[k];
      return k + "=" + (Array.isArray(v) ? "[" + v.join(", ") + "]" : String(v));
    }).join("  ");
  }

  function renderCaseBody(c, body) {
    var geometry = c.geometry || null;
    var outShape = geometry && c.input_shape ? c.input_shape.slice(0, 2).concat(geometry.map(function (a) { return a.out; })) : null;
    append(body, kv([
      ["source", c.source ? el("code", { text: c.source }) : null],
      ["operator", (c.op || "") + (c.convention ? " (" + c.convention + ")" : "")],
      ["attributes", c.spec ? el("code", { text: specText(c.spec) }) : null],
      ["input", c.input_shape ? (c.dtype || "") + " [" + c.input_shape.join(", ") + "]" : null],
      ["output shape", outShape ? "[" + outShape.join(", ") + "]" : null],
      ["padding applied", geometry ? geometry.map(function (a) { return a.pad_begin + "/" + a.pad_end + (a.overhang ? " (+" + a.overhang + " overhang)" : ""); }).join(", ") : null],
      ["tags", (c.tags || []).join(", ")],
      ["replay", c.replay ? el("code", { "class": "replay", text: c.replay }) : null]
    ]));
    if (c.message) body.appendChild(el("div", { "class": "box message", text: c.message }));
    if (c.erratum) {
      var corr = c.erratum.correct || {};
      body.appendChild(el("div", { "class": "box erratum" }, el("b", { text: "Erratum record" }),
        kv([["the document says", c.erratum.says], ["why it is wrong", c.erratum.why],
          ["correct", el("code", { text: Object.keys(corr).map(function (k) { return k + ": " + JSON.stringify(corr[k]); }).join("; ") })]])));
    }
    var view = { c: c, checkIndex: defaultCheck(c), output: "values", fixed: null, selected: null };
    (c.checks || []).forEach(function (k, i) { body.appendChild(renderCheck(view, k, i)); });
    var tensorHost = el("div", { "class": "tensor-view" });
    var windowHost = el("div", { "class": "window-view" });
    view.tensorHost = tensorHost; view.windowHost = windowHost;
    if ((c.checks || []).length) {
      append(body, [el("h3", { text: "Expected vs actual" }), tensorHost,
        el("h3", { text: "Receptive window over the padded input" }), windowHost]);
      var first = firstDiff(c.checks[view.checkIndex]);
      if (first) select(view, first.position, first.output); else { renderTensors(view); renderWindow(view); }
    }
  }

  function defaultCheck(c) {
    var checks = c.checks || [];
    for (var i = 0; i < checks.length; i++) if (checks[i].verdict !== "pass" && checks[i].verdict !== "skip") return i;
    return 0;
  }
  function firstDiff(check) {
    if (!check) return null;
    var d = (check.diffs || []).filter(function (x) { return x.position; })[0];
    return d || null;
  }

  function renderCheck(view, k, i) {
    var box = el("div", { "class": "check", "data-runner": k.runner },
      el("div", null, badge(k.verdict), k.severity ? el("span", { "class": "badge severity s-" + k.severity, text: k.severity }) : null,
        " ", el("b", { text: k.runner }), el("span", { "class": "note", text: "  " + k.kind + (k.version ? " " + k.version : "") })));
    if (k.message) box.appendChild(el("div", { "class": "box message", text: k.message }));
    if (k.diagnosis) box.appendChild(el("div", { "class": "box diagnosis" }, el("b", { text: "Diagnosis: " }), k.diagnosis));
    var diffs = k.diffs || [];
    if (diffs.length) {
      var rows = diffs.map(function (d) {
        var link = d.position ? el("button", { "class": "cellbtn", type: "button", text: pos(d.position), title: "show this element",
          onclick: function () { view.checkIndex = i; select(view, d.position, d.output); } }) : "shape";
        return el("tr", { "class": "diff-row" }, el("td", { text: d.output }), el("td", null, link),
          el("td", { "class": "num", text: Array.isArray(d.expected) ? "[" + d.expected.join(", ") + "]" : fmt(d.expected) }),
          el("td", { "class": "num", text: Array.isArray(d.actual) ? "[" + d.actual.join(", ") + "]" : fmt(d.actual) }));
      });
      box.appendChild(el("div", { "class": "diffs-wrap" }, el("table", { "class": "grid-table diffs" },
        el("thead", null, el("tr", null, ["output", "position", "expected", "actual"].map(function (h) { return el("th", { text: h }); }))),
        el("tbody", null, rows))));
      var total = Math.max(k.n_diffs || 0, diffs.length);
      if (total > diffs.length) box.appendChild(el("p", { "class": "note", text: "… and " + (total - diffs.length) + " more differing element(s) (only the first " + diffs.length + " are stored)" }));
    }
    return box;
  }

  // ------------------------------------------------------------------ expected vs actual
  function select(view, position, output) {
    if (output && output !== "shape") view.output = output;
    view.selected = position ? position.slice() : null;
    if (position) view.fixed = position.slice(0, Math.max(2, position.length - 2));
    renderTensors(view);
    renderWindow(view);
  }

  function tensorsOf(view) {
    var k = view.c.checks[view.checkIndex] || {};
    var e = k.expected ? k.expected[view.output] : undefined;
    var a = k.actual ? k.actual[view.output] : undefined;
    return { check: k, expected: e, actual: a };
  }

  function spatialRank(view) {
    var c = view.c;
    if (c.geometry) return c.geometry.length;
    if (c.input_shape) return c.input_shape.length - 2;
    var t = tensorsOf(view);
    var s = shapeOf(t.actual !== undefined && t.actual !== null ? t.actual : t.expected);
    return Math.max(1, s.length - 2);
  }

  function outShapeOf(view, t) {
    var src = t.actual !== undefined && t.actual !== null ? t.actual : t.expected;
    if (src !== undefined && src !== null) return shapeOf(src);
    var c = view.c;
    if (c.geometry && c.input_shape) return c.input_shape.slice(0, 2).concat(c.geometry.map(function (a) { return a.out; }));
    return null;
  }

  // A 2-D slice [rows][cols] of an N-d tensor (N, C, *spatial) at fixed leading indices.
  function slice2d(t, fixed, r) {
    var sub = at(t, fixed);
    if (sub === undefined) return null;
    if (r === 1) return [sub];
    return sub;
  }
  function fullPos(fixed, r, i, j) { return r === 1 ? fixed.concat([j]) : fixed.concat([i, j]); }

  function renderTensors(view) {
    var host = view.tensorHost;
    host.textContent = "";
    var c = view.c, checks = c.checks || [];
    var r = spatialRank(view);
    var t = tensorsOf(view);
    var shape = outShapeOf(view, t);
    var nFixed = r === 1 ? 2 : r;
    if (!view.fixed || view.fixed.length !== nFixed) view.fixed = range(nFixed).map(function () { return 0; });

    var runnerSel = el("select", { "class": "check-select", onchange: function (e) { view.checkIndex = +e.target.value; renderTensors(view); renderWindow(view); } },
      checks.map(function (k, i) { return el("option", { value: i, text: k.runner + " (" + k.verdict + ")", selected: i === view.checkIndex }); }));
    var outputs = [];
    ["values", "indices"].forEach(function (o) {
      if ((t.check.expected && o in t.check.expected) || (t.check.actual && o in t.check.actual)) outputs.push(o);
    });
    if (outputs.indexOf(view.output) < 0 && outputs.length) view.output = outputs[0];
    var outputSel = el("select", { "class": "output-select", onchange: function (e) { view.output = e.target.value; renderTensors(view); renderWindow(view); } },
      outputs.map(function (o) { return el("option", { value: o, text: o, selected: o === view.output }); }));
    var names = ["n", "c"].concat(range(Math.max(0, nFixed - 2)).map(function (i) { return "d" + (i + 1); }));
    var sliceSels = shape ? names.map(function (name, i) {
      return el("label", null, name + " ",
        el("select", { "class": "slice-select", "data-axis": name, onchange: function (e) { view.fixed[i] = +e.target.value; renderTensors(view); } },
          range(shape[i] || 1).map(function (v) { return el("option", { value: v, text: String(v), selected: v === view.fixed[i] }); })));
    }) : [];
    host.appendChild(el("div", { "class": "tensor-controls" }, el("label", null, "runner ", runnerSel),
      outputs.length ? el("label", null, "output ", outputSel) : null,
      sliceSels.length ? el("span", { "class": "note", text: "slice:" }) : null, sliceSels));

    var hasE = t.expected !== undefined && t.expected !== null, hasA = t.actual !== undefined && t.actual !== null;
    var se = hasE ? shapeOf(t.expected) : null, sa = hasA ? shapeOf(t.actual) : null;
    if (hasE && hasA && se.join(",") !== sa.join(",")) {
      host.appendChild(el("p", { "class": "warn", text: "Shapes differ: the document has [" + se.join(", ") + "], " + t.check.runner + " gives [" + sa.join(", ") + "]." }));
    }
    var E = hasE ? slice2d(t.expected, view.fixed, r) : null;
    var A = hasA ? slice2d(t.actual, view.fixed, r) : null;
    var diffSet = {};
    (t.check.diffs || []).forEach(function (d) { if (d.position && d.output === view.output) diffSet[d.position.join(",")] = d; });
    var panels = el("div", { "class": "panels" });
    var sameShape = E && A && shapeOf(E).join(",") === shapeOf(A).join(",");
    var big = function (g) { return g && (g.length > MAX_GRID || (g[0] || []).length > MAX_GRID); };
    function differs(i, j) {
      if (sameShape) return !same(E[i][j], A[i][j]);
      return !!diffSet[fullPos(view.fixed, r, i, j).join(",")];
    }
    var eLabel = t.check.kind === "peer" ? "expected (reference engine)" : "expected (document)";
    if (E && !big(E)) panels.appendChild(valueGrid(view, eLabel, E, r, differs, "grid-expected"));
    if (A && !big(A)) panels.appendChild(valueGrid(view, "actual (" + t.check.runner + ")", A, r, differs, "grid-actual"));
    var hm = heatmap(view, E, A, sameShape, diffSet, r, shape);
    if (hm) panels.appendChild(hm);
    if (!panels.firstChild) {
      host.appendChild(el("p", { "class": "note", text: "No stored " + view.output + " for this runner (tensors over 4096 elements are not kept in the result); see the differing positions above." }));
    } else host.appendChild(panels);
    if ((E && big(E)) || (A && big(A))) host.appendChild(el("p", { "class": "note", text: "The slice is larger than " + MAX_GRID + "×" + MAX_GRID + ": only the heatmap is drawn." }));
  }

  function isSelected(view, p) { return view.selected && view.selected.join(",") === p.join(","); }

  function valueGrid(view, title, G, r, differs, cls) {
    var cols = (G[0] || []).length;
    var head = el("tr", null, el("th", null), range(cols).map(function (j) { return el("th", { text: String(j) }); }));
    var rows = G.map(function (row, i) {
      return el("tr", null, el("th", { text: r === 1 ? "" : String(i) }), row.map(function (v, j) {
        var p = fullPos(view.fixed, r, i, j);
        var cl = (differs(i, j) ? "differs" : "") + (isSelected(view, p) ? " selected" : "");
        return el("td", { "class": cl.trim() || null, "data-pos": p.join(","), title: pos(p), text: fmt(v),
          onclick: function () { select(view, p); } });
      }));
    });
    return el("div", { "class": "panel " + cls }, el("h4", { text: title }), el("table", { "class": "tensor" }, el("thead", null, head), el("tbody", null, rows)));
  }

  function heatColor(t) {
    // light to dark red
    var a = [254, 224, 210], b = [165, 15, 21];
    return "rgb(" + [0, 1, 2].map(function (i) { return Math.round(a[i] + (b[i] - a[i]) * t); }).join(",") + ")";
  }

  function heatmap(view, E, A, sameShape, diffSet, r, shape) {
    var rows, cols, mag = null, fromDiffs = false;
    if (sameShape) {
      rows = E.length; cols = (E[0] || []).length;
      var maxd = 0;
      mag = E.map(function (row, i) {
        return row.map(function (v, j) {
          var w = A[i][j];
          if (same(v, w)) return 0;
          var d = Math.abs(num(v) - num(w));
          if (!isFinite(d)) return -1; // NaN/inf mismatch: darkest
          if (d > maxd) maxd = d;
          return d;
        });
      });
      mag = mag.map(function (row) { return row.map(function (d) { return d < 0 ? 1 : (d > 0 ? 0.25 + 0.75 * d / maxd : 0); }); });
    } else if (shape) {
      var keys = Object.keys(diffSet);
      if (!keys.length) return null;
      fromDiffs = true;
      rows = r === 1 ? 1 : shape[shape.length - 2]; cols = shape[shape.length - 1];
      mag = range(rows).map(function (i) { return range(cols).map(function (j) { return diffSet[fullPos(view.fixed, r, i, j).join(",")] ? 1 : 0; }); });
    } else return null;
    var size = Math.max(6, Math.min(22, Math.floor(360 / Math.max(rows, cols, 1))));
    var W = cols * size + 28, H = rows * size + 22;
    var svg = sv("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, "class": "heatmap", role: "img" });
    var count = 0;
    for (var i = 0; i < rows; i++) {
      for (var j = 0; j < cols; j++) {
        var m = mag[i][j];
        if (m > 0) count++;
        (function (i, j, m) {
          var p = fullPos(view.fixed, r, i, j);
          svg.appendChild(sv("rect", { x: 24 + j * size, y: 18 + i * size, width: size - 1, height: size - 1,
            fill: m > 0 ? heatColor(m) : "#eef1f4", "class": "hm-cell" + (m > 0 ? " hm-diff" : "") + (isSelected(view, p) ? " selected" : ""),
            "data-pos": p.join(","), stroke: isSelected(view, p) ? "#0969da" : "none", "stroke-width": 2,
            onclick: function () { select(view, p); } }, sv("title", { text: pos(p) + (m > 0 ? " differs" : "") })));
        })(i, j, m);
      }
    }
    if (size >= 12) {
      for (var jj = 0; jj < cols; jj++) svg.appendChild(sv("text", { x: 24 + jj * size + size / 2, y: 12, "font-size": 9, "text-anchor": "middle", fill: "#5f6b76", text: String(jj) }));
      if (r > 1) for (var ii = 0; ii < rows; ii++) svg.appendChild(sv("text", { x: 20, y: 18 + ii * size + size * 0.7, "font-size": 9, "text-anchor": "end", fill: "#5f6b76", text: String(ii) }));
    }
    return el("div", { "class": "panel grid-heatmap", "data-differing": count },
      el("h4", { text: "differing positions" + (fromDiffs ? " (stored diffs only)" : "") + ": " + count }), svg,
      el("div", { "class": "legend" }, el("span", null, el("i", { style: "background:#eef1f4" }), "equal"),
        el("span", null, el("i", { style: "background:" + heatColor(0.25) }), "small |Δ|"),
        el("span", null, el("i", { style: "background:" + heatColor(1) }), "largest |Δ| or NaN/∞")));
  }

  // ------------------------------------------------------------------ receptive window
  function axisKind(a, p) {
    if (p >= 0 && p < a.size) return "input";
    if (p >= -a.pad_begin && p < a.size + a.pad_end) return "pad";
    return "overhang";
  }
  function combine(kinds) {
    if (kinds.indexOf("overhang") >= 0) return "overhang";
    if (kinds.indexOf("pad") >= 0) return "pad";
    return "input";
  }
  // Window of output element ``o`` (spatial) from the geometry: "Window o covers input
  // positions o * stride - pad_begin + j * dilation for j in range(kernel)" (spec/shape.py).
  function windowTaps(geometry, o) {
    var perAxis = geometry.map(function (a, i) {
      return range(a.kernel).map(function (j) { return o[i] * a.stride - a.pad_begin + j * a.dilation; });
    });
    return product(perAxis).map(function (coords) {
      return { coords: coords, kind: combine(coords.map(function (p, i) { return axisKind(geometry[i], p); })) };
    });
  }

  function storedDiff(view) {
    var k = view.c.checks[view.checkIndex] || {};
    var key = view.selected ? view.selected.join(",") : null;
    var hit = null;
    (k.diffs || []).forEach(function (d) { if (!hit && d.position && d.position.join(",") === key && d.window) hit = d; });
    return hit;
  }

  function renderWindow(view) {
    var host = view.windowHost;
    host.textContent = "";
    var c = view.c, geometry = c.geometry;
    var p = view.selected;
    if (!p) {
      host.appendChild(el("p", { "class": "note", text: "Click an output element (in the grids, the heatmap or a differing position) to see its window." }));
      return;
    }
    var r = p.length - 2, n = p[0], ch = p[1], o = p.slice(2);
    var diff = storedDiff(view);
    var taps;
    if (geometry && geometry.length === r) {
      var nTaps = geometry.reduce(function (m, a) { return m * a.kernel; }, 1);
      if (!(nTaps <= MAX_WINDOW_TAPS)) {
        host.appendChild(el("p", { "class": "note", text: "The window of this element has " + nTaps + " taps (kernel " + geometry.map(function (a) { return a.kernel; }).join("x") + "): too many to draw." }));
        return;
      }
      taps = windowTaps(geometry, o);
      if (diff) {
        var a = diff.window.map(function (w) { return w.coords.join(",") + ":" + w.kind; }).join(" ");
        var b = taps.map(function (w) { return w.coords.join(",") + ":" + w.kind; }).join(" ");
        if (a !== b) host.appendChild(el("p", { "class": "warn window-mismatch", text: "The stored window of this element differs from the one drawn from the geometry." }));
      }
    } else if (diff) {
      taps = diff.window.map(function (w) { return { coords: w.coords, kind: w.kind }; });
    } else {
      host.appendChild(el("p", { "class": "note", text: "This result has no geometry for this case; windows are shown only for stored differing positions." }));
      return;
    }
    var plane = c.input ? at(c.input, [n, ch]) : undefined;
    taps.forEach(function (tp, i) {
      tp.value = tp.kind === "input" && plane !== undefined ? at(plane, tp.coords) : (diff && diff.window[i] ? diff.window[i].value : undefined);
      if (tp.kind !== "input") tp.value = undefined;
    });
    var t = tensorsOf(view);
    var actualVals = t.check.actual ? t.check.actual.values : undefined;
    var actualV = actualVals ? at(actualVals, p) : (diff && diff.output === "values" ? diff.actual : undefined);
    var expectedVals = t.check.expected ? t.check.expected.values : undefined;
    var expectedV = expectedVals ? at(expectedVals, p) : (diff && diff.output === "values" ? diff.expected : undefined);
    var isMax = /max/i.test(c.op || (c.spec && c.spec.op) || "");
    var chosenKey = null, chosenHow = "";
    if (isMax) {
      if (diff && diff.window.some(function (w) { return w.chosen; })) {
        diff.window.forEach(function (w) { if (w.chosen) chosenKey = w.coords.join(","); });
        chosenHow = "the tap " + t.check.runner + "'s index points to";
      } else if (actualV !== undefined) {
        taps.forEach(function (tp) { if (chosenKey === null && tp.kind === "input" && tp.value !== undefined && same(tp.value, actualV)) chosenKey = tp.coords.join(","); });
        chosenHow = "implied argmax: the first tap holding " + t.check.runner + "'s value";
      }
    }
    var title = "output " + pos(p) + " (n=" + n + ", c=" + ch + ")";
    host.appendChild(el("p", null, el("b", { text: title }),
      el("span", { "class": "note", text: "  " + (t.check.kind === "peer" ? "reference" : "document") + ": " + fmt(expectedV) + "  ·  " + t.check.runner + ": " + fmt(actualV) })));
    var geom = geometry && geometry.length === r ? geometry : boxGeometry(taps, r);
    host.appendChild(windowSvgs(geom, taps, plane, chosenKey, r));
    host.appendChild(el("div", { "class": "legend" },
      el("span", null, el("i", { style: "background:#fff" }), "input"),
      el("span", null, el("i", { style: "background:var(--pad)" }), "padding"),
      el("span", null, el("i", { style: "background:var(--overhang)" }), "past pads_end (overhang)"),
      el("span", null, el("i", { style: "background:#fff;border:2px solid var(--tap)" }), "window tap"),
      isMax ? el("span", null, el("i", { style: "background:var(--chosen)" }), "chosen (argmax)") : null));
    host.appendChild(windowFacts(view, taps, actualV, expectedV, isMax, chosenKey, chosenHow));
  }

  // Without geometry: a bounding box of the stored window (no padding extents known).
  function boxGeometry(taps, r) {
    return range(r).map(function (i) {
      var vals = taps.map(function (t) { return t.coords[i]; });
      var lo = Math.min.apply(null, vals), hi = Math.max.apply(null, vals);
      return { size: hi + 1, pad_begin: Math.max(0, -lo), pad_end: 0, overhang: 0, kernel: 1, stride: 1, dilation: 1, out: 1, _box: [lo, hi + 1] };
    });
  }

  function axisRange(a, taps, i) {
    var lo = a._box ? a._box[0] : -a.pad_begin;
    var hi = a._box ? a._box[1] : a.size + a.pad_end + a.overhang;
    var cropped = false;
    if (hi - lo > MAX_WINDOW_SPAN) {
      var vals = taps.map(function (t) { return t.coords[i]; });
      var tlo = Math.min.apply(null, vals), thi = Math.max.apply(null, vals) + 1;
      var nlo = Math.max(lo, tlo - 3), nhi = Math.min(hi, thi + 3);
      cropped = nlo > lo || nhi < hi;
      lo = nlo; hi = nhi;
    }
    return { lo: lo, hi: hi, cropped: cropped };
  }

  function windowSvgs(geom, taps, plane, chosenKey, r) {
    var wrap = el("div", { "class": "panels window-grids" });
    var tapMap = {};
    taps.forEach(function (t) { tapMap[t.coords.join(",")] = t; });
    var rows, cols, lead = [[]];
    if (r === 1) { rows = { lo: 0, hi: 1 }; cols = axisRange(geom[0], taps, 0); }
    else {
      rows = axisRange(geom[r - 2], taps, r - 2); cols = axisRange(geom[r - 1], taps, r - 1);
      if (r > 2) {
        // one grid per distinct leading coordinate the window touches
        lead = product(range(r - 2).map(function (i) {
          var seen = [];
          taps.forEach(function (t) { if (seen.indexOf(t.coords[i]) < 0) seen.push(t.coords[i]); });
          return seen;
        }));
      }
    }
    lead.forEach(function (prefix) {
      var cell = 44, ox = 30, oy = 20;
      var nr = rows.hi - rows.lo, nc = cols.hi - cols.lo;
      var W = ox + nc * cell + 4, H = oy + nr * cell + 4;
      var svg = sv("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, "class": "window-svg", role: "img" });
      svg.appendChild(sv("defs", null,
        sv("pattern", { id: "hatch", width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" },
          sv("line", { x1: 0, y1: 0, x2: 0, y2: 6, stroke: "#b6bec7", "stroke-width": 2 }))));
      var leadKinds = prefix.map(function (p, i) { return axisKind(geom[i], p); });
      for (var i = rows.lo; i < rows.hi; i++) {
        for (var j = cols.lo; j < cols.hi; j++) {
          var coords = r === 1 ? [j] : prefix.concat([i, j]);
          var kinds = leadKinds.concat(r === 1 ? [axisKind(geom[0], j)] : [axisKind(geom[r - 2], i), axisKind(geom[r - 1], j)]);
          var kind = combine(kinds);
          var key = coords.join(",");
          var tap = tapMap[key];
          var x = ox + (j - cols.lo) * cell, y = oy + (i - rows.lo) * cell;
          var fill = kind === "input" ? "#ffffff" : (kind === "pad" ? PAD_FILL : OVERHANG_FILL);
          if (tap && key === chosenKey) fill = CHOSEN_FILL;
          var g = sv("g", { "class": "wcell wcell-" + kind + (tap ? " wtap" : "") + (key === chosenKey ? " wchosen" : ""), "data-coords": key });
          g.appendChild(sv("rect", { x: x, y: y, width: cell, height: cell, fill: fill, stroke: "#c9d1d9" }));
          if (kind === "pad") g.appendChild(sv("rect", { x: x, y: y, width: cell, height: cell, fill: "url(#hatch)", opacity: 0.6 }));
          if (kind === "overhang") {
            g.appendChild(sv("path", { d: "M" + (x + 6) + " " + (y + 6) + "L" + (x + cell - 6) + " " + (y + cell - 6) + "M" + (x + cell - 6) + " " + (y + 6) + "L" + (x + 6) + " " + (y + cell - 6), stroke: "#e5534b", "stroke-width": 1.5 }));
          }
          var v = kind === "input" && plane !== undefined ? at(plane, coords) : (tap ? tap.value : undefined);
          if (kind === "input" && v !== undefined) {
            g.appendChild(sv("text", { x: x + cell / 2, y: y + cell / 2 + 4, "font-size": 10, "text-anchor": "middle", fill: "#1d2125", text: fmtShort(v) }));
          }
          if (tap) g.appendChild(sv("rect", { x: x + 1.5, y: y + 1.5, width: cell - 3, height: cell - 3, fill: "none", stroke: "#0969da", "stroke-width": 3 }));
          g.appendChild(sv("title", { text: "(" + key + ") " + kind + (tap ? ", window tap" : "") + (v !== undefined ? " = " + fmt(v) : "") }));
          svg.appendChild(g);
        }
      }
      // outline of the real input
      var a0 = r === 1 ? null : geom[r - 2], a1 = geom[r - 1];
      var x0 = Math.max(0, cols.lo), x1 = Math.min(a1.size, cols.hi);
      var y0 = r === 1 ? 0 : Math.max(0, rows.lo), y1 = r === 1 ? 1 : Math.min(a0.size, rows.hi);
      if (x1 > x0 && y1 > y0) svg.appendChild(sv("rect", { x: ox + (x0 - cols.lo) * cell, y: oy + (y0 - rows.lo) * cell, width: (x1 - x0) * cell, height: (y1 - y0) * cell, fill: "none", stroke: "#1d2125", "stroke-width": 1.5 }));
      for (var jj = cols.lo; jj < cols.hi; jj++) svg.appendChild(sv("text", { x: ox + (jj - cols.lo) * cell + cell / 2, y: 13, "font-size": 10, "text-anchor": "middle", fill: "#5f6b76", text: String(jj) }));
      if (r > 1) for (var ii = rows.lo; ii < rows.hi; ii++) svg.appendChild(sv("text", { x: ox - 4, y: oy + (ii - rows.lo) * cell + cell / 2 + 4, "font-size": 10, "text-anchor": "end", fill: "#5f6b76", text: String(ii) }));
      var label = r > 2 ? "leading coordinate(s) " + prefix.join(", ") + " (" + combine(leadKinds) + ")" : (r === 1 ? "axis 0" : "rows: axis " + (r - 2) + ", columns: axis " + (r - 1));
      var note = (rows.cropped || cols.cropped) ? " — cropped around the window" : "";
      wrap.appendChild(el("div", { "class": "panel" }, el("h4", { text: label + note }), svg));
    });
    return wrap;
  }

  function windowFacts(view, taps, actualV, expectedV, isMax, chosenKey, chosenHow) {
    var nInput = 0, nPad = 0, nOver = 0, sum = 0, known = true;
    taps.forEach(function (t) {
      if (t.kind === "input") { nInput++; if (t.value === undefined) known = false; else sum += num(t.value); }
      else if (t.kind === "pad") nPad++;
      else nOver++;
    });
    var items = [["window taps", taps.length + " = " + nInput + " input + " + nPad + " padding + " + nOver + " past pads_end"]];
    if (isMax) {
      items.push(["argmax", chosenKey !== null ? "(" + chosenKey + ") — " + chosenHow
        : (actualV !== undefined ? "no input tap holds " + fmt(actualV) + (nInput ? "" : " (the window lies wholly in padding)") : "unknown (no stored output)")]);
    } else if (known && nInput) {
      var implied = function (v) { return v !== undefined && v !== null && num(v) !== 0 && isFinite(num(v)) ? fmt(sum / num(v)) : "–"; };
      var k = view.c.checks[view.checkIndex] || {};
      items.push(["sum of input taps", fmt(sum)]);
      items.push(["implied divisor", k.runner + ": " + implied(actualV) + "  ·  " + (k.kind === "peer" ? "reference" : "document") + ": " + implied(expectedV)
        + "  (candidates: " + nInput + " input taps; " + (nInput + nPad) + " inside the padded input; " + taps.length + " = whole kernel)"]);
    }
    return kv(items);
  }

  // A fuzz campaign's hits per spec region (docs/fuzzing.md, "Coverage"): the most any runner
  // had, and the runners that never hit a region (or stayed under --min-per-region).
  function renderCoverage() {
    var fz = result.fuzz || {};
    var reach = Array.isArray(fz.coverage_reachable) ? fz.coverage_reachable : [];
    if (!reach.length) return;
    var cov = fz.coverage && typeof fz.coverage === "object" ? fz.coverage : {};
    var declined = fz.coverage_declined && typeof fz.coverage_declined === "object" ? fz.coverage_declined : {};
    var floor = Math.max(1, Number(fz.min_per_region) || 0);
    var runners = Object.keys(cov).sort();
    var hitsOf = function (r, key) { var h = cov[r] || {}; return Number(h[key]) || 0; };
    var rows = reach.map(function (key) {
      var most = 0, shortList = [];
      runners.forEach(function (r) {
        var n = hitsOf(r, key);
        most = Math.max(most, n);
        if (n < floor) {
          var d = Number((declined[r] || {})[key]) || 0;
          shortList.push(r + " (" + n + (d ? "; declined " + d + ": cannot express" : "") + ")");
        }
      });
      return el("tr", { "data-region": key, "class": most ? "" : "never-hit" }, el("th", { text: key }),
        el("td", { "class": "num", text: String(most) }), el("td", { text: shortList.join(", ") }));
    });
    var unreachable = fz.coverage_unreachable && typeof fz.coverage_unreachable === "object" ? fz.coverage_unreachable : {};
    Object.keys(unreachable).forEach(function (key) {
      rows.push(el("tr", { "data-region": key, "class": "unreachable" }, el("th", { text: key }),
        el("td", { "class": "num", text: "-" }), el("td", { text: "unreachable: " + unreachable[key] })));
    });
    var host = document.getElementById("runners");
    host.appendChild(el("h2", { text: "Spec regions reached" }));
    host.appendChild(el("table", { "class": "grid-table", id: "coverage-table" },
      el("thead", null, el("tr", null, el("th", { text: "region" }), el("th", { text: "hits" }),
        el("th", { text: floor > 1 ? "runners under " + floor : "never hit by" }))),
      el("tbody", null, rows)));
  }

  // ------------------------------------------------------------------ start
  renderHeader();
  renderRunnerTable();
  renderCoverage();
  renderControls();
  renderCases();
  applyFilters();
  var hash = decodeURIComponent((location.hash || "").replace(/^#case=/, ""));
  if (hash) cases.forEach(function (c) { if (c.case_id === hash) { c._node.open = true; c._node.scrollIntoView(); } });
  else {
    // Open the most severe failing case that has differing positions (else the most severe
    // failing case) so the first view already shows what differs.
    var rank = function (c) {
      var diffs = (c.checks || []).some(function (k) { return (k.diffs || []).length > 0; });
      return VERDICTS.indexOf(c.verdict) + (diffs ? 0 : VERDICTS.length);
    };
    var worst = null;
    cases.forEach(function (c) {
      if (["error", "fail", "crash", "timeout"].indexOf(c.verdict) < 0) return;
      if (!worst || rank(c) < rank(worst)) worst = c;
    });
    if (worst) worst._node.open = true;
  }
  document.body.setAttribute("data-ready", "1");
})();
