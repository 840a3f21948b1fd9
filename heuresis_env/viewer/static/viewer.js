/* Heuresis trace viewer. Hand-written, no dependencies, nothing fetched from the network:
 * the episode table comes from the JSON embedded in index.html, and an episode's file
 * (episodes/<file>.js, one script call heuresisEpisode(file, payload)) is loaded only when
 * the episode is opened. State lives in the URL hash (#policy=…&family=…&episode=…, a filter's
 * several values joined by commas; #compare=fileA,fileB for two episodes side by side), so a
 * report can link to a filtered table and a view can be bookmarked. */
(function () {
  "use strict";

  var TAIL = 1, ARROW = 2, CIRCLE = 3;
  var LEFT = { 1: "-", 2: "<", 3: "o" };
  var RIGHT = { 1: "-", 2: ">", 3: "o" };
  var PAGE_SIZE = 100;
  var SVG_NS = "http://www.w3.org/2000/svg";

  var data = JSON.parse(document.getElementById("index-data").textContent);
  var app = document.getElementById("app");
  var col = {};
  data.columns.forEach(function (name, k) { col[name] = k; });
  var runs = data.runs;
  var rows = data.rows.map(function (row) {
    var item = {};
    data.columns.forEach(function (name, k) { item[name] = row[k]; });
    item.runInfo = runs[item.run];
    item.policy = item.runInfo.policy;
    item.runName = item.runInfo.name;
    return item;
  });
  var byFile = {};
  rows.forEach(function (row) { byFile[row.file] = row; });

  var state = { policy: "", family: "", reason: "", run: "", q: "", f1min: "", f1max: "",
                sort: "f1", dir: "desc", page: 0, episode: "", step: null, compare: "" };
  var loaded = {};
  var waiting = {};

  // ---- helpers ------------------------------------------------------------------------------
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (key) {
        var value = attrs[key];
        if (value === null || value === undefined || value === false) { return; }
        if (key === "text") { node.textContent = value; }
        else if (key === "onclick") { node.addEventListener("click", value); }
        else if (key === "oninput") { node.addEventListener("input", value); }
        else if (key === "onchange") { node.addEventListener("change", value); }
        else { node.setAttribute(key, value === true ? "" : value); }
      });
    }
    (children || []).forEach(function (child) {
      if (child === null || child === undefined) { return; }
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }

  function svg(tag, attrs) {
    var node = document.createElementNS(SVG_NS, tag);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    return node;
  }

  function num(value, digits) {
    if (value === null || value === undefined || isNaN(value)) { return "—"; }
    return Number(value).toFixed(digits === undefined ? 3 : digits);
  }

  function signed(value, digits) {
    if (value === null || value === undefined || isNaN(value)) { return "—"; }
    var text = Number(value).toFixed(digits === undefined ? 3 : digits);
    return value >= 0 ? "+" + text : text;
  }

  function money(value) {
    return value === null || value === undefined ? "—" : "$" + Number(value).toFixed(4);
  }

  function edgeText(edge) {
    return edge[0] + " " + LEFT[edge[2]] + "-" + RIGHT[edge[3]] + " " + edge[1];
  }

  function pairKey(a, b, names) {
    var ia = names.indexOf(a), ib = names.indexOf(b);
    return ia <= ib ? a + "|" + b : b + "|" + a;
  }

  function argsText(args) {
    if (args === null || args === undefined) { return ""; }
    var parts = [];
    Object.keys(args).forEach(function (key) {
      var value = args[key];
      if (value === null || (Array.isArray(value) && value.length === 0)) { return; }
      parts.push(key + "=" + JSON.stringify(value));
    });
    return parts.join(", ");
  }

  function stepSummary(step) {
    if (!step.tool) { return "(unparsed action)"; }
    var text = step.tool + "(" + argsText(step.args) + ")";
    return text.length > 110 ? text.slice(0, 107) + "…" : text;
  }

  // ---- the URL hash ----------------------------------------------------------------------------
  var KEYS = ["policy", "family", "reason", "run", "q", "f1min", "f1max", "sort", "dir", "page",
              "episode", "step", "compare"];

  function readHash() {
    var params = new URLSearchParams(window.location.hash.replace(/^#/, ""));
    state.policy = params.get("policy") || "";
    state.family = params.get("family") || "";
    state.reason = params.get("reason") || "";
    state.run = params.get("run") || "";
    state.q = params.get("q") || "";
    state.f1min = scoreParam(params.get("f1min"));
    state.f1max = scoreParam(params.get("f1max"));
    state.compare = params.get("compare") || "";
    state.sort = params.get("sort") || "f1";
    state.dir = params.get("dir") === "asc" ? "asc" : "desc";
    state.page = parseInt(params.get("page") || "0", 10) || 0;
    state.episode = params.get("episode") || "";
    var step = params.get("step");
    state.step = step === null ? null : parseInt(step, 10);
  }

  function scoreParam(value) {
    if (value === null || value === "" || isNaN(Number(value))) { return ""; }
    return String(Number(value));
  }

  function writeHash(replace) {
    var params = new URLSearchParams();
    KEYS.forEach(function (key) {
      var value = state[key];
      if (value === null || value === "" || (key === "page" && value === 0) ||
          (key === "sort" && value === "f1") || (key === "dir" && value === "desc")) { return; }
      params.set(key, String(value));
    });
    var hash = "#" + params.toString();
    if (hash === window.location.hash || (hash === "#" && !window.location.hash)) { return; }
    if (replace) { history.replaceState(null, "", hash); } else { history.pushState(null, "", hash); }
  }

  // ---- the index -------------------------------------------------------------------------------
  function unique(values) {
    var seen = {};
    return values.filter(function (v) { if (seen[v]) { return false; } seen[v] = true; return true; });
  }

  function chosen(key) { return state[key] ? state[key].split(",") : []; }

  function matches(row) {
    if (state.policy && chosen("policy").indexOf(row.policy) < 0) { return false; }
    if (state.family && chosen("family").indexOf(row.family) < 0) { return false; }
    if (state.reason && chosen("reason").indexOf(row.reason) < 0) { return false; }
    if (state.run && chosen("run").indexOf(row.runName) < 0) { return false; }
    if (state.f1min !== "" && !(row.f1 !== null && row.f1 >= Number(state.f1min))) { return false; }
    if (state.f1max !== "" && !(row.f1 !== null && row.f1 <= Number(state.f1max))) { return false; }
    if (state.q) {  // every word must occur: in the id, run, policy, tools or arguments
      var text = (row.id + " " + row.runName + " " + row.policy + " " + row.family + " " +
                  (row.search || "")).toLowerCase();
      var words = state.q.toLowerCase().split(/\s+/).filter(function (w) { return w; });
      if (!words.every(function (w) { return text.indexOf(w) >= 0; })) { return false; }
    }
    return true;
  }

  function sortedRows(list) {
    var key = state.sort, sign = state.dir === "asc" ? 1 : -1;
    return list.slice().sort(function (a, b) {
      var x = a[key], y = b[key];
      var xm = x === null || x === undefined, ym = y === null || y === undefined;
      if (xm || ym) { return xm === ym ? 0 : (xm ? 1 : -1); }  // missing values last
      if (x < y) { return -sign; }
      if (x > y) { return sign; }
      return a.id < b.id ? -1 : (a.id > b.id ? 1 : 0);
    });
  }

  /* A filter of several values: a folded list of checkboxes (none checked: all). */
  function multiSelect(id, label, plural, key, values) {
    var summary = el("summary", { "aria-label": label });
    var box = el("div", { class: "choices" });
    var node = el("details", { id: id, class: "multi", "data-key": key }, [summary, box]);
    function caption() {
      var picked = chosen(key);
      summary.textContent = picked.length === 0 ? "all " + plural :
        picked.length === 1 ? picked[0] : picked.length + " " + plural;
      summary.title = picked.join(", ");
    }
    var all = values.slice();
    chosen(key).forEach(function (v) { if (all.indexOf(v) < 0) { all.push(v); } });  // from a link
    all.forEach(function (value) {
      var input = el("input", { type: "checkbox", value: value,
        checked: chosen(key).indexOf(value) >= 0, onchange: function () {
          var picked = Array.prototype.filter.call(box.querySelectorAll("input"),
            function (i) { return i.checked; }).map(function (i) { return i.value; });
          state[key] = picked.join(","); state.page = 0; writeHash(); caption(); renderTable();
        } });
      box.appendChild(el("label", { title: value }, [input, " " + value]));
    });
    box.appendChild(el("button", { type: "button", class: "clear", onclick: function () {
      state[key] = ""; state.page = 0; writeHash();
      box.querySelectorAll("input").forEach(function (i) { i.checked = false; });
      caption(); renderTable();
    } }, ["all"]));
    caption();
    return node;
  }

  function scoreInput(id, label, key) {
    var input = el("input", { id: id, type: "number", min: 0, max: 1, step: 0.05,
      placeholder: label, "aria-label": label, class: "score", value: state[key],
      oninput: function () {
        state[key] = scoreParam(input.value); state.page = 0; writeHash(true); renderTable();
      } });
    return input;
  }

  function renderRuns() {
    var body = runs.map(function (run) {
      var options = Object.keys(run.options || {}).length ? JSON.stringify(run.options) : "";
      var settings = run.settings || {};
      return el("tr", null, [
        el("td", { class: "left", text: run.name, title: run.path }),
        el("td", { class: "left", text: run.policy }),
        el("td", { class: "left small", text: options }),
        el("td", { text: run.split }), el("td", { class: "size", text: (run.d || "?") + " × " +
          (run.n || "?") }),
        el("td", { class: "left small", text: "steps " + settings.max_steps + ", " +
          (settings.guided ? "guided" : "unguided") + ", " + settings.toolbox + " toolbox, target " +
          settings.target }),
        el("td", { text: run.episodes + (run.episodes < run.expected ? " of " + run.expected : "") }),
        el("td", { text: num(run.mean_f1) })]);
    });
    return el("div", { class: "table-wrap" }, [el("table", { id: "runs" }, [
      el("caption", { text: "Runs" }),
      el("thead", null, [el("tr", null, ["run", "policy", "options", "split", "d × n",
        "settings", "episodes", "mean F1"].map(function (h) { return el("th", { text: h }); }))]),
      el("tbody", null, body)])]);
  }

  var tableBody, countNode, pagerNode;

  function renderIndex() {
    document.title = "Heuresis trace viewer";
    app.textContent = "";
    var policies = unique(runs.map(function (r) { return r.policy; })).sort();
    var families = unique(rows.map(function (r) { return r.family; }));
    var reasons = unique(rows.map(function (r) { return r.reason; })).sort();
    var runNames = runs.map(function (r) { return r.name; });
    var text = el("input", { id: "filter-text", type: "search",
      placeholder: "episode, tool or argument…", "aria-label": "search episodes, tools and arguments",
      value: state.q, oninput: function () {
        state.q = text.value; state.page = 0; writeHash(true); renderTable();
      } });
    var filters = el("div", { id: "filters", class: "filters" }, [
      multiSelect("filter-policy", "policy", "policies", "policy", policies),
      multiSelect("filter-family", "family", "families", "family", families),
      multiSelect("filter-reason", "termination reason", "termination reasons", "reason", reasons),
      multiSelect("filter-run", "run", "runs", "run", runNames),
      scoreInput("filter-f1-min", "F1 ≥", "f1min"), scoreInput("filter-f1-max", "F1 ≤", "f1max"),
      text, countNode = el("span", { id: "episode-count", class: "count" })]);
    var columns = [["id", "episode"], ["runName", "run"], ["policy", "policy"],
      ["family", "family"], ["f1", "F1"], ["delta", "Δ vs BCA_φ"], ["precision", "precision"],
      ["recall", "recall"], ["shd", "SHD"], ["steps", "steps"], ["reason", "ended by"],
      ["prompt_tokens", "tokens in"], ["completion_tokens", "tokens out"], ["cost", "cost"]];
    var head = el("tr", null, columns.map(function (c) {
      var th = el("th", { "data-sort": c[0], class: "sortable", title: "sort by " + c[1],
        onclick: function () {
          if (state.sort === c[0]) { state.dir = state.dir === "desc" ? "asc" : "desc"; }
          else { state.sort = c[0]; state.dir = "desc"; }
          state.page = 0; writeHash(); renderTable();
        } }, [c[1]]);
      return th;
    }));
    tableBody = el("tbody");
    pagerNode = el("div", { id: "pager", class: "pager" });
    var warnings = data.warnings && data.warnings.length ? el("details", { id: "warnings" }, [
      el("summary", { text: data.warnings.length + " warning" +
        (data.warnings.length === 1 ? "" : "s") + " while building the site" }),
      el("ul", null, data.warnings.map(function (w) { return el("li", { text: w }); }))]) : null;
    app.appendChild(el("section", { id: "index" }, [
      renderRuns(), warnings, el("h2", { text: "Episodes" }), filters,
      el("div", { class: "table-wrap" }, [el("table", { id: "episodes" },
        [el("thead", null, [head]), tableBody])]), pagerNode,
      data.has_bca ? null : el("p", { class: "note", text: "Δ vs BCA_φ needs a run of the " +
        "bca policy among the runs given to heuresis view." })]));
    renderTable();
  }

  function renderTable() {
    var chosen = sortedRows(rows.filter(matches));
    var pages = Math.max(1, Math.ceil(chosen.length / PAGE_SIZE));
    state.page = Math.min(Math.max(0, state.page), pages - 1);
    var shown = chosen.slice(state.page * PAGE_SIZE, (state.page + 1) * PAGE_SIZE);
    var fragment = document.createDocumentFragment();
    shown.forEach(function (row) {
      var link = el("a", { href: "#episode=" + encodeURIComponent(row.file), onclick:
        function (event) { event.preventDefault(); openEpisode(row.file); } }, [row.id]);
      fragment.appendChild(el("tr", { "data-file": row.file, class: row.error ? "errored" : null },
        [el("td", { class: "left" }, [link]), el("td", { class: "left", text: row.runName }),
         el("td", { class: "left", text: row.policy }), el("td", { class: "left", text: row.family }),
         el("td", { class: "f1", text: num(row.f1) }), el("td", { class: "delta " +
           (row.delta > 0 ? "up" : row.delta < 0 ? "down" : ""), text: signed(row.delta) }),
         el("td", { text: num(row.precision) }), el("td", { text: num(row.recall) }),
         el("td", { text: num(row.shd, 0) }), el("td", { text: String(row.steps) }),
         el("td", { class: "left", text: row.reason }),
         el("td", { text: row.prompt_tokens === null ? "—" : String(row.prompt_tokens) }),
         el("td", { text: row.completion_tokens === null ? "—" : String(row.completion_tokens) }),
         el("td", { text: money(row.cost) })]));
    });
    tableBody.textContent = "";
    tableBody.appendChild(fragment);
    countNode.textContent = chosen.length + " of " + rows.length + " episodes";
    document.querySelectorAll("#episodes th").forEach(function (th) {
      th.classList.toggle("sorted", th.getAttribute("data-sort") === state.sort);
      th.setAttribute("aria-sort", th.getAttribute("data-sort") === state.sort ?
        (state.dir === "asc" ? "ascending" : "descending") : "none");
    });
    pagerNode.textContent = "";
    if (pages > 1) {
      pagerNode.appendChild(el("button", { id: "page-prev", disabled: state.page === 0,
        onclick: function () { state.page -= 1; writeHash(); renderTable(); } }, ["‹ previous"]));
      pagerNode.appendChild(el("span", { text: " page " + (state.page + 1) + " of " + pages + " " }));
      pagerNode.appendChild(el("button", { id: "page-next", disabled: state.page >= pages - 1,
        onclick: function () { state.page += 1; writeHash(); renderTable(); } }, ["next ›"]));
    }
  }

  // ---- loading an episode --------------------------------------------------------------------
  window.heuresisEpisode = function (file, payload) {
    loaded[file] = payload;
    (waiting[file] || []).forEach(function (callback) { callback(payload, null); });
    delete waiting[file];
  };

  function loadEpisode(file, callback) {
    if (loaded[file]) { callback(loaded[file], null); return; }
    if (waiting[file]) { waiting[file].push(callback); return; }
    waiting[file] = [callback];
    var script = document.createElement("script");
    script.src = "episodes/" + encodeURIComponent(file) + ".js";
    script.onerror = function () {
      (waiting[file] || []).forEach(function (cb) { cb(null, "could not load " + script.src); });
      delete waiting[file];
    };
    document.head.appendChild(script);
  }

  function openEpisode(file) {
    state.episode = file; state.step = null;
    writeHash();
    route();
  }

  // ---- drawing graphs ----------------------------------------------------------------------------
  /* Nodes on a circle; an edge is a line with its two end marks drawn as shapes (arrowhead,
   * open circle, nothing for a tail). options.classes maps a pair key to a CSS class; options.
   * ghosts are edges drawn dashed (removed at this step, or missing from a submitted graph). */
  function drawGraph(names, edges, options) {
    options = options || {};
    var size = options.size || 340, centre = size / 2, radius = size / 2 - 34, nodeR = 15;
    var root = svg("svg", { viewBox: "0 0 " + size + " " + size, width: size, height: size,
      role: "img", class: "graph", "aria-label": options.label || "graph" });
    var position = {};
    names.forEach(function (name, k) {
      var angle = -Math.PI / 2 + 2 * Math.PI * k / names.length;
      position[name] = [centre + radius * Math.cos(angle), centre + radius * Math.sin(angle)];
    });
    function drawEdge(edge, extraClass) {
      var a = position[edge[0]], b = position[edge[1]];
      if (!a || !b) { return; }
      var dx = b[0] - a[0], dy = b[1] - a[1], length = Math.sqrt(dx * dx + dy * dy) || 1;
      var ux = dx / length, uy = dy / length, gap = nodeR + 3;
      var p = [a[0] + ux * gap, a[1] + uy * gap], q = [b[0] - ux * gap, b[1] - uy * gap];
      var key = pairKey(edge[0], edge[1], names);
      var classes = "edge " + ((options.classes && options.classes[key]) || "") + " " +
        (extraClass || "");
      var group = svg("g", { class: classes.trim().replace(/\s+/g, " "), "data-pair": key });
      var title = svg("title", {});
      title.textContent = edgeText(edge) + (extraClass ? " (" + extraClass.trim() + ")" : "");
      group.appendChild(title);
      group.appendChild(svg("line", { x1: p[0], y1: p[1], x2: q[0], y2: q[1] }));
      [[edge[2], p, -1], [edge[3], q, 1]].forEach(function (end) {
        var mark = end[0], at = end[1], dir = end[2];  // dir: +1 points along u→v
        if (mark === ARROW) {
          var tip = at, back = [at[0] - dir * ux * 10, at[1] - dir * uy * 10];
          var nx = -uy * 5, ny = ux * 5;
          group.appendChild(svg("polygon", { class: "mark", points: [tip, [back[0] + nx, back[1] + ny],
            [back[0] - nx, back[1] - ny]].map(function (pt) { return pt.join(","); }).join(" ") }));
        } else if (mark === CIRCLE) {
          group.appendChild(svg("circle", { class: "mark open", r: 4,
            cx: at[0] - dir * ux * 4, cy: at[1] - dir * uy * 4 }));
        }
      });
      root.appendChild(group);
    }
    (options.ghosts || []).forEach(function (edge) { drawEdge(edge, edge.ghostClass || "ghost"); });
    edges.forEach(function (edge) { drawEdge(edge, ""); });
    names.forEach(function (name) {
      var node = svg("g", { class: "node", "data-name": name });
      node.appendChild(svg("circle", { cx: position[name][0], cy: position[name][1], r: nodeR }));
      var label = svg("text", { x: position[name][0], y: position[name][1] + 4,
        "text-anchor": "middle" });
      label.textContent = name;
      node.appendChild(label);
      root.appendChild(node);
    });
    return root;
  }

  // ---- the episode view -----------------------------------------------------------------------
  function graphStates(episode) {
    var current = {};
    (episode.start || []).forEach(function (e) { current[pairKey(e[0], e[1], episode.names)] = e; });
    var states = [current];
    episode.steps.forEach(function (step) {
      if (step.diff.length) {
        current = Object.assign({}, current);
        step.diff.forEach(function (change) {
          var key = pairKey(change.pair[0], change.pair[1], episode.names);
          if (change.after) { current[key] = change.after; } else { delete current[key]; }
        });
      }
      states.push(current);
    });
    return states;
  }

  function kv(pairs) {
    return el("table", { class: "kv" }, [el("tbody", null, pairs.filter(function (p) {
      return p !== null;
    }).map(function (p) {
      return el("tr", null, [el("th", { text: p[0] }), el("td", { text: p[1] })]);
    }))]);
  }

  function pre(text, id) {
    return el("pre", { class: "output", id: id || null, text: text });
  }

  function renderEpisode(episode) {
    document.title = episode.id + " · " + episode.run + " · Heuresis";
    app.textContent = "";
    var states = graphStates(episode);
    var steps = episode.steps;
    var citedBy = {};
    steps.forEach(function (step) {
      (step.evidence || []).forEach(function (n) { (citedBy[n] = citedBy[n] || []).push(step.n); });
    });
    var stepIndex = {};
    steps.forEach(function (step, k) { stepIndex[step.n] = k + 1; });
    var position = state.step === null ? steps.length : Math.max(0, Math.min(steps.length, state.step));

    var back = el("a", { href: "#", id: "back-link", onclick: function (event) {
      event.preventDefault(); state.episode = ""; state.step = null; writeHash(); route();
    } }, ["← all episodes"]);
    var totalTokens = episode.prompt_tokens === null || episode.prompt_tokens === undefined ? "—" :
      episode.prompt_tokens + " in, " + episode.completion_tokens + " out";
    var summary = kv([
      ["run", episode.run + " (policy " + episode.policy + ")"],
      ["instance", episode.family + "/" + episode.split + "/" + episode.index + ", repeat " +
        episode.repeat + " (data " + String(episode.sha256).slice(0, 12) + "…)"],
      episode.question ? ["question", episode.question.kind + " (" + episode.question.level +
        " level): answered " + JSON.stringify(episode.question.answer) + ", truth " +
        JSON.stringify((episode.question.truth || {}).answer) + ", correct " +
        num(episode.scores.correct, 0)] : null,
      ["F1", num(episode.scores.f1) + (episode.delta === null || episode.delta === undefined ? "" :
        "  (Δ vs BCA_φ " + signed(episode.delta) + ")")],
      ["precision / recall", num(episode.scores.precision) + " / " + num(episode.scores.recall)],
      ["SHD / nSHD", num(episode.scores.shd, 0) + " / " + num(episode.scores.nshd)],
      ["ended by", episode.reason + " after " + episode.steps_used + " steps" +
        (episode.seconds === null ? "" : ", " + num(episode.seconds, 1) + " s")],
      ["tokens", totalTokens], ["cost", money(episode.cost)],
      episode.api_retries ? ["API retries", String(episode.api_retries)] : null,
      episode.error ? ["error", episode.error] : null]);

    var slider = el("input", { type: "range", id: "step-slider", min: 0, max: steps.length,
      value: position, "aria-label": "step" });
    var stepLabel = el("span", { id: "step-label" });
    var prev = el("button", { id: "step-prev", title: "previous step (←)" }, ["‹"]);
    var next = el("button", { id: "step-next", title: "next step (→)" }, ["›"]);
    var graphBox = el("div", { id: "graph-working", class: "graph-box" });
    var detail = el("div", { id: "step-detail" });
    var evidence = el("div", { id: "evidence-panel" });
    var listBody = el("tbody");
    steps.forEach(function (step, k) {
      var edits = step.diff.map(function (c) {
        return (c.before ? edgeText(c.before) : "·") + " → " + (c.after ? edgeText(c.after) : "none");
      }).join("; ");
      listBody.appendChild(el("tr", { "data-step": k + 1, class: (step.error ? "errored " : "") +
        (step.diff.length ? "edit" : ""), onclick: function () { go(k + 1); } }, [
        el("td", { text: String(step.n) }), el("td", { class: "left", text: stepSummary(step) }),
        el("td", { class: "left", text: step.error ? "error" : edits }),
        el("td", { text: step.prompt_tokens === undefined ? "" : String(step.prompt_tokens +
          step.completion_tokens) })]));
    });

    function stepLink(n) {
      var k = stepIndex[n];
      var step = k ? steps[k - 1] : null;
      return el("a", { href: "#", class: "step-link", "data-step": k || "", onclick:
        function (event) { event.preventDefault(); if (k) { go(k); } } },
        ["step " + n + (step ? ": " + stepSummary(step) : " (not in the trace)")]);
    }

    function go(k) {
      position = Math.max(0, Math.min(steps.length, k));
      slider.value = position;
      state.step = position === steps.length ? null : position;
      writeHash(true);
      show();
    }

    function show() {
      var step = position > 0 ? steps[position - 1] : null;
      var changed = {};
      var ghosts = [];
      if (step) {
        step.diff.forEach(function (c) {
          var key = pairKey(c.pair[0], c.pair[1], episode.names);
          changed[key] = "changed";
          if (!c.after && c.before) { ghosts.push(Object.assign(c.before.slice(), { ghostClass: "removed" })); }
        });
      }
      var current = states[position];
      var edges = Object.keys(current).map(function (k) { return current[k]; });
      graphBox.textContent = "";
      graphBox.appendChild(drawGraph(episode.names, edges, { classes: changed, ghosts: ghosts,
        label: "working graph at step " + position }));
      graphBox.appendChild(el("p", { class: "caption", text: edges.length + " edges" +
        (step && step.diff.length ? "; highlighted: changed at this step" : "") }));
      stepLabel.textContent = position === 0 ? "start (" + (episode.start && episode.start.length ?
        "guided start" : "empty graph") + ")" : "step " + step.n + " of " + steps.length;

      detail.textContent = "";
      evidence.textContent = "";
      if (!step) {
        detail.appendChild(el("p", { text: "The working graph before the first action." }));
      } else {
        detail.appendChild(el("h3", { text: "Step " + step.n + ": " + (step.tool || "unparsed action") }));
        detail.appendChild(kv([
          ["arguments", step.args ? JSON.stringify(step.args) : "—"],
          step.action ? ["action as sent", step.action] : null,
          ["result", step.error ? "rejected: " + step.error : "ran"],
          step.diff.length ? ["graph change", step.diff.map(function (c) {
            return (c.before ? edgeText(c.before) : "no edge") + " → " +
              (c.after ? edgeText(c.after) : "no edge");
          }).join("; ")] : null,
          ["time", (step.seconds === null ? "—" : num(step.seconds, 2) + " s into the episode") +
            (step.duration === null ? "" : ", took " + num(step.duration, 3) + " s")],
          step.model_calls ? ["model", step.prompt_tokens + " tokens in, " + step.completion_tokens +
            " out, " + money(step.cost) + " (" + step.model_calls + " call" +
            (step.model_calls === 1 ? "" : "s") + ")"] : null]));
        if (step.reply) {
          detail.appendChild(el("h4", { text: "The model's text" }));
          detail.appendChild(pre(step.reply));
        }
        detail.appendChild(el("h4", { text: "Output" }));
        var transcribed = steps.some(function (s) { return s.output !== undefined; });
        detail.appendChild(step.output !== undefined ? pre(step.output, "step-output") :
          el("p", { class: "note", id: "step-output", text: transcribed && position === steps.length ?
            "The episode ended with this step; no output was read after it." :
            "Not recorded: this trace keeps only a digest of each output (written before " +
            "traces kept the text)." }));

        evidence.appendChild(el("h3", { text: "Evidence" }));
        if (step.evidence !== undefined) {
          evidence.appendChild(el("p", { text: step.evidence.length ? "This edit cites " +
            step.evidence.length + " tool call" + (step.evidence.length === 1 ? "" : "s") + " (" +
            (step.evidence_source === "explicit" ? "named by the agent" :
              "the calls since the pair's previous edit") + "):" :
            "This edit cites no tool call." }));
          evidence.appendChild(el("ul", { class: "evidence" }, step.evidence.map(function (n) {
            var k = stepIndex[n], cited = k ? steps[k - 1] : null;
            return el("li", null, [stepLink(n), cited && cited.output ?
              pre(cited.output.length > 600 ? cited.output.slice(0, 600) + "…" : cited.output) : null]);
          })));
        } else if (citedBy[step.n]) {
          evidence.appendChild(el("p", { text: "Cited as evidence by the edits at:" }));
          evidence.appendChild(el("ul", { class: "evidence" }, citedBy[step.n].map(function (n) {
            return el("li", null, [stepLink(n)]);
          })));
        } else {
          evidence.appendChild(el("p", { class: "note", text: step.diff.length || step.tool === "submit" ?
            "No evidence recorded for this step." : "No edit cites this call." }));
        }
      }
      listBody.querySelectorAll("tr").forEach(function (tr) {
        tr.classList.toggle("current", Number(tr.getAttribute("data-step")) === position);
      });
      prev.disabled = position === 0;
      next.disabled = position === steps.length;
    }

    slider.addEventListener("input", function () { go(Number(slider.value)); });
    prev.addEventListener("click", function () { go(position - 1); });
    next.addEventListener("click", function () { go(position + 1); });
    document.onkeydown = function (event) {
      if (!state.episode || event.target.tagName === "INPUT" && event.target !== slider) { return; }
      if (event.key === "ArrowLeft" && event.target !== slider) { go(position - 1); }
      if (event.key === "ArrowRight" && event.target !== slider) { go(position + 1); }
    };

    var notes = (episode.notes || []).map(function (n) { return el("p", { class: "note", text: n }); });
    app.appendChild(el("section", { id: "episode" }, [
      back, el("h2", { id: "episode-title", text: episode.id + " — " + episode.run }),
      compareChooser(state.episode),
      el("div", { class: "columns" }, [summary, outcomePanel(episode)]),
      el("h3", { text: "Steps" }),
      el("div", { class: "slider-row" }, [prev, slider, next, stepLabel]),
      el("div", { class: "columns" }, [graphBox, el("div", { class: "step-side" }, [detail, evidence])]),
      el("details", { id: "step-list-box", open: steps.length <= 60 }, [
        el("summary", { text: "All " + steps.length + " steps" }),
        el("table", { id: "step-list" }, [el("thead", null, [el("tr", null, ["#", "action",
          "graph change", "tokens"].map(function (h) { return el("th", { text: h }); }))]),
          listBody])]),
      notes.length ? el("div", null, notes) : null,
      episode.transcript ? el("details", { id: "transcript" }, [
        el("summary", { text: "The policy's own record (transcript)" }), pre(episode.transcript)]) : null,
      settingsBlock(episode)]));
    show();
  }

  // ---- two episodes on one instance, side by side -----------------------------------------------
  function compareChooser(file) {
    var row = byFile[file];
    if (!row) { return null; }
    var others = rows.filter(function (r) { return r.instance === row.instance && r.file !== file; });
    if (!others.length) {
      return el("p", { class: "note", id: "compare-none", text: "No other episode on this " +
        "instance among these runs: give heuresis view another policy's run of it to compare." });
    }
    var pick = el("select", { id: "compare-with", "aria-label": "compare with" },
      [el("option", { value: "", text: "another episode on this instance…" })].concat(
        others.map(function (r) {
          return el("option", { value: r.file, text: r.runName + " (" + r.policy + ") " + r.id +
            ", F1 " + num(r.f1) });
        })));
    pick.addEventListener("change", function () { if (pick.value) { openCompare(file, pick.value); } });
    return el("div", { id: "compare-box", class: "compare-box" }, [
      el("span", { text: "Compare with " }), pick]);
  }

  function openCompare(a, b) {
    state.episode = ""; state.step = null; state.compare = a + "," + b;
    writeHash(); route();
  }

  function edgeMap(edges, names) {
    var map = {};
    (edges || []).forEach(function (e) { map[pairKey(e[0], e[1], names)] = e; });
    return map;
  }

  /* What differs between two graphs on the same variables: pairs adjacent in one only, and
   * pairs adjacent in both with other marks (as "X1 --> X2 / X1 --- X2"). */
  function graphDiff(a, b, names) {
    var ma = edgeMap(a, names), mb = edgeMap(b, names), out = { onlyA: [], onlyB: [], marks: [] };
    Object.keys(ma).forEach(function (k) {
      if (!mb[k]) { out.onlyA.push(ma[k]); }
      else if (edgeText(ma[k]) !== edgeText(mb[k]) &&
               edgeText(ma[k]) !== edgeText([mb[k][1], mb[k][0], mb[k][3], mb[k][2]])) {
        out.marks.push([ma[k], mb[k]]);
      }
    });
    Object.keys(mb).forEach(function (k) { if (!ma[k]) { out.onlyB.push(mb[k]); } });
    return out;
  }

  function stepTable(episode, id) {
    return el("table", { id: id, class: "compare-steps" }, [
      el("thead", null, [el("tr", null, ["#", "action", "graph change"].map(function (h) {
        return el("th", { text: h });
      }))]),
      el("tbody", null, episode.steps.map(function (step) {
        var edits = step.diff.map(function (c) {
          return (c.before ? edgeText(c.before) : "·") + " → " + (c.after ? edgeText(c.after) : "none");
        }).join("; ");
        return el("tr", { class: (step.error ? "errored " : "") + (step.diff.length ? "edit" : ""),
          title: step.output ? step.output.slice(0, 600) : "" }, [
          el("td", { text: String(step.n) }), el("td", { class: "left", text: stepSummary(step) }),
          el("td", { class: "left", text: step.error ? "error" : edits })]);
      }))]);
  }

  function renderCompare(a, b) {
    var names = a.names.length ? a.names : b.names;
    document.title = "Compare " + a.id + " · Heuresis";
    app.textContent = "";
    var back = el("a", { href: "#", id: "back-link", onclick: function (event) {
      event.preventDefault(); state.compare = ""; writeHash(); route();
    } }, ["← all episodes"]);
    function open(episode, file) {
      return el("a", { href: "#episode=" + encodeURIComponent(file), onclick: function (event) {
        event.preventDefault(); state.compare = ""; openEpisode(file);
      } }, [episode.run + " (" + episode.policy + ")"]);
    }
    var files = state.compare.split(",");
    var head = el("tr", null, [el("th", { text: "" }), el("th", { class: "left" }, [open(a, files[0])]),
      el("th", { class: "left" }, [open(b, files[1])])]);
    function line(label, va, vb) {
      return el("tr", null, [el("th", { class: "left", text: label }),
        el("td", { text: va }), el("td", { text: vb })]);
    }
    var summary = el("table", { id: "compare-summary", class: "kv" }, [el("thead", null, [head]),
      el("tbody", null, [
        line("episode", a.id, b.id),
        line("F1", num(a.scores.f1), num(b.scores.f1)),
        line("precision / recall", num(a.scores.precision) + " / " + num(a.scores.recall),
          num(b.scores.precision) + " / " + num(b.scores.recall)),
        line("SHD", num(a.scores.shd, 0), num(b.scores.shd, 0)),
        line("ended by", a.reason + " after " + a.steps_used + " steps",
          b.reason + " after " + b.steps_used + " steps"),
        line("tokens", a.prompt_tokens === null ? "—" : a.prompt_tokens + " in, " +
          a.completion_tokens + " out", b.prompt_tokens === null ? "—" : b.prompt_tokens +
          " in, " + b.completion_tokens + " out"),
        line("error", a.error || "—", b.error || "—")])]);

    var diff = graphDiff(a.final, b.final, names);
    var classes = {}, ghosts = [];
    diff.onlyA.forEach(function (e) { classes[pairKey(e[0], e[1], names)] = "only-a"; });
    diff.marks.forEach(function (p) { classes[pairKey(p[0][0], p[0][1], names)] = "changed"; });
    diff.onlyB.forEach(function (e) { ghosts.push(Object.assign(e.slice(), { ghostClass: "only-b" })); });
    function submitted(episode, id, caption) {
      var truthClasses = {}, missing = [];
      if (episode.comparison) {
        episode.comparison.correct.forEach(function (p) { truthClasses[pairKey(p[0], p[1], names)] = "correct"; });
        episode.comparison.extra.forEach(function (p) { truthClasses[pairKey(p[0], p[1], names)] = "extra"; });
        missing = (episode.truth || []).filter(function (e) {
          return episode.comparison.missing.some(function (p) {
            return pairKey(p[0], p[1], names) === pairKey(e[0], e[1], names);
          });
        }).map(function (e) { return Object.assign(e.slice(), { ghostClass: "missing ghost" }); });
      }
      return el("div", { id: id, class: "graph-box" }, [
        drawGraph(names, episode.final || [], { size: 280, classes: truthClasses, ghosts: missing,
          label: caption }), el("p", { class: "caption", text: caption })]);
    }
    var list = function (edges) { return edges.length ? edges.map(edgeText).join(", ") : "none"; };
    app.appendChild(el("section", { id: "compare" }, [
      back, el("h2", { id: "compare-title", text: "Two episodes on " + a.family + "/" + a.split +
        "/" + a.index + " (data " + String(a.sha256).slice(0, 12) + "…)" }),
      summary,
      el("h3", { text: "Submitted graphs" }),
      el("div", { class: "pair" }, [
        submitted(a, "compare-a", "A: " + a.run + " (against the true graph)"),
        el("div", { id: "compare-diff", class: "graph-box" }, [
          drawGraph(names, a.final || [], { size: 280, classes: classes, ghosts: ghosts,
            label: "A against B" }),
          el("p", { class: "caption", text: "A against B: blue only in A, dashed only in B, " +
            "orange other marks" })]),
        submitted(b, "compare-b", "B: " + b.run + " (against the true graph)")]),
      el("p", { class: "legend", id: "compare-counts" }, [
        el("span", { class: "swatch only-a" }), "only in A (" + diff.onlyA.length + "): " + list(diff.onlyA) + "  ",
        el("span", { class: "swatch only-b" }), "only in B (" + diff.onlyB.length + "): " + list(diff.onlyB) + "  ",
        el("span", { class: "swatch changed" }), "other marks (" + diff.marks.length + "): " +
          (diff.marks.length ? diff.marks.map(function (p) {
            return edgeText(p[0]) + " / " + edgeText(p[1]);
          }).join(", ") : "none")]),
      el("h3", { text: "Steps" }),
      el("div", { class: "columns compare-columns" }, [
        el("div", null, [el("h4", { text: "A: " + a.run }), stepTable(a, "compare-steps-a")]),
        el("div", null, [el("h4", { text: "B: " + b.run }), stepTable(b, "compare-steps-b")])])]));
  }

  function outcomePanel(episode) {
    var box = el("div", { id: "outcome" }, [el("h3", { text: "After the episode" })]);
    if (!episode.final) {
      box.appendChild(el("p", { class: "note", text: "No final graph was recorded." }));
      return box;
    }
    if (!episode.comparison && episode.truth && episode.task === "qa") {
      box.appendChild(el("div", { class: "pair" }, [
        el("div", { id: "graph-truth", class: "graph-box" }, [
          drawGraph(episode.names, episode.truth, { size: 260, label: "true graph" }),
          el("p", { class: "caption", text: "true graph (the hidden DAG)" })])]));
      return box;
    }
    if (!episode.truth) {
      box.appendChild(el("p", { class: "note", text: "The true graph is not shown: " +
        (episode.truth_note || "the instance could not be regenerated.") }));
      box.appendChild(el("div", { id: "graph-submitted", class: "graph-box" }, [
        drawGraph(episode.names, episode.final, { size: 260, label: "submitted graph" }),
        el("p", { class: "caption", text: "submitted graph" })]));
      return box;
    }
    var c = episode.comparison, names = episode.names;
    var truthClasses = {}, submittedClasses = {};
    c.correct.forEach(function (p) { var k = pairKey(p[0], p[1], names); truthClasses[k] = "correct"; submittedClasses[k] = "correct"; });
    c.missing.forEach(function (p) { truthClasses[pairKey(p[0], p[1], names)] = "missing"; });
    c.extra.forEach(function (p) { submittedClasses[pairKey(p[0], p[1], names)] = "extra"; });
    var missingGhosts = episode.truth.filter(function (e) {
      return truthClasses[pairKey(e[0], e[1], names)] === "missing";
    }).map(function (e) { return Object.assign(e.slice(), { ghostClass: "missing ghost" }); });
    box.appendChild(el("div", { class: "pair" }, [
      el("div", { id: "graph-truth", class: "graph-box" }, [
        drawGraph(names, episode.truth, { size: 260, classes: truthClasses, label: "true graph" }),
        el("p", { class: "caption", text: "true graph (the hidden DAG)" })]),
      el("div", { id: "graph-submitted", class: "graph-box" }, [
        drawGraph(names, episode.final, { size: 260, classes: submittedClasses,
          ghosts: missingGhosts, label: "submitted graph" }),
        el("p", { class: "caption", text: "submitted graph" })])]));
    box.appendChild(el("p", { class: "legend", id: "outcome-counts" }, [
      el("span", { class: "swatch correct" }), c.correct.length + " correct  ",
      el("span", { class: "swatch missing" }), c.missing.length + " missing (dashed)  ",
      el("span", { class: "swatch extra" }), c.extra.length + " extra"]));
    return box;
  }

  function settingsBlock(episode) {
    return el("details", { id: "episode-settings" }, [el("summary", { text: "Settings and options" }),
      pre(JSON.stringify({ settings: episode.settings, options: episode.options,
        tools: episode.tools }, null, 1))]);
  }

  // ---- routing ----------------------------------------------------------------------------------
  function route() {
    readHash();
    document.onkeydown = null;
    if (state.compare) { routeCompare(); return; }
    if (!state.episode) { renderIndex(); return; }
    var file = state.episode;
    if (!byFile[file]) {
      app.textContent = "";
      app.appendChild(el("p", { class: "error", text: "No episode " + file + " in this site." }));
      return;
    }
    app.textContent = "";
    app.appendChild(el("p", { id: "loading", text: "Loading " + byFile[file].id + "…" }));
    loadEpisode(file, function (episode, error) {
      if (state.episode !== file) { return; }
      if (error) {
        app.textContent = "";
        app.appendChild(el("p", { class: "error", text: error }));
        return;
      }
      renderEpisode(episode);
      window.scrollTo(0, 0);
    });
  }

  function routeCompare() {
    var files = state.compare.split(",");
    var missing = files.filter(function (f) { return !byFile[f]; });
    app.textContent = "";
    if (files.length !== 2 || missing.length) {
      app.appendChild(el("p", { class: "error", text: "Cannot compare " + state.compare +
        ": give two episodes of this site (#compare=FILE,FILE)." }));
      return;
    }
    app.appendChild(el("p", { id: "loading", text: "Loading two episodes…" }));
    var got = {};
    files.forEach(function (file) {
      loadEpisode(file, function (episode, error) {
        if (state.compare !== files.join(",")) { return; }
        if (error) {
          app.textContent = "";
          app.appendChild(el("p", { class: "error", text: error }));
          return;
        }
        got[file] = episode;
        if (got[files[0]] && got[files[1]]) { renderCompare(got[files[0]], got[files[1]]); window.scrollTo(0, 0); }
      });
    });
  }

  // a click or the focus outside an open filter list, or Escape, closes it
  function closeLists(event) {
    document.querySelectorAll("details.multi[open]").forEach(function (node) {
      if (!event || !node.contains(event.target)) { node.removeAttribute("open"); }
    });
  }
  document.addEventListener("click", closeLists);
  document.addEventListener("focusin", closeLists);
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") { closeLists(null); }
  });

  document.getElementById("home-link").addEventListener("click", function (event) {
    event.preventDefault();
    state.episode = ""; state.step = null; state.compare = ""; writeHash(); route();
  });
  document.getElementById("site-summary").textContent = runs.length + " run" +
    (runs.length === 1 ? "" : "s") + ", " + rows.length + " episodes · built " + data.built;
  window.addEventListener("popstate", route);
  window.addEventListener("hashchange", route);
  route();
}());
