"""What every page of the site shares, written once into DIR/assets/: plotly.js (from the plotly wheel: the site
needs no network), the style sheet (the report pages' own: render/html.py `CSS`, the pages being report pages written
by the same renderer) and the series pages' one script (each page carries only its data)."""

from __future__ import annotations

from pathlib import Path

PLOTLY = "assets/plotly.min.js"
STYLE = "assets/dashboard.css"
SERIES_SCRIPT = "assets/series.js"
TOP_LAYER_LINES = 6  # a series page's layer trends: half the costliest in the newest night, then those that moved most


def plotly_js() -> bytes:
    """plotly.js as the installed plotly package ships it."""
    import plotly  # the package only to find its bundled file: nothing of it runs here

    return (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_bytes()


INDEX_JS = """
(function () {
  var rows = Array.prototype.slice.call(document.querySelectorAll("tr[data-series]"));
  var selects = Array.prototype.slice.call(document.querySelectorAll("select[data-filter]"));
  selects.forEach(function (sel) {
    var key = sel.getAttribute("data-filter"), seen = {};
    rows.forEach(function (r) { seen[r.getAttribute("data-" + key)] = true; });
    Object.keys(seen).sort().forEach(function (v) {
      var o = document.createElement("option"); o.value = v; o.textContent = v; sel.appendChild(o);
    });
    sel.addEventListener("change", apply);
  });
  // the filters live in the address too (index.html#backend=portable&verdict=regressed): a view can be linked
  var linked = {};
  location.hash.replace(/^#/, "").split("&").forEach(function (pair) {
    var kv = pair.split("=");
    if (kv.length === 2) linked[decodeURIComponent(kv[0])] = decodeURIComponent(kv[1]);
  });
  selects.forEach(function (sel) {
    var value = linked[sel.getAttribute("data-filter")];
    if (value !== undefined && Array.prototype.some.call(sel.options, function (o) { return o.value === value; })) {
      sel.value = value;
    }
  });
  apply();
  function apply() {
    var want = {};
    selects.forEach(function (s) { if (s.value) want[s.getAttribute("data-filter")] = s.value; });
    var hash = Object.keys(want).map(function (k) { return encodeURIComponent(k) + "=" + encodeURIComponent(want[k]); });
    try { history.replaceState(null, "", hash.length ? "#" + hash.join("&") : location.pathname); } catch (e) { /* file:// */ }
    rows.forEach(function (r) {
      var show = Object.keys(want).every(function (k) { return r.getAttribute("data-" + k) === want[k]; });
      r.style.display = show ? "" : "none";
    });
    Array.prototype.forEach.call(document.querySelectorAll("tr.group"), function (g) {
      var any = rows.some(function (r) { return r.getAttribute("data-group") === g.getAttribute("data-group") &&
                                                r.style.display !== "none"; });
      g.style.display = any ? "" : "none";
    });
    document.getElementById("shown").textContent = rows.filter(function (r) { return r.style.display !== "none"; }).length;
  }
})();
"""

SERIES_JS = """
(function () {
  var d = window.etfarmSeries, c = d.columns, keep = [];
  // plotly draws a subset of HTML in every text it shows (names, legends, hovers, notes): <a href> would be a live
  // link. Each text from the data passes through t(), which escapes it so plotly shows it as written.
  function t(s) { return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;"); }
  c.p50.forEach(function (v, i) { if (v !== null) keep.push(i); });  // measured nights only
  function col(name) { return keep.map(function (i) { return c[name][i]; }); }
  var x = col("started"), p50 = col("p50"), lo = col("lo"), hi = col("hi");
  var custom = keep.map(function (i) { return [t(c.run[i]), t(c.commit[i] || "-"), c.link[i] || ""]; });
  var config = {responsive: true, displaylogo: false};
  function hover(unit) {
    return "%{y:.4g} " + unit + "<br>run %{customdata[0]}<br>commit %{customdata[1]}<extra>%{fullData.name}</extra>";
  }
  function line(name, values, unit, extra) {
    return Object.assign({x: x, y: values, customdata: custom, name: t(name), mode: "lines+markers", type: "scatter",
                          connectgaps: true, hovertemplate: hover(unit)}, extra || {});
  }
  function marks(name, test, symbol, color, size) {
    return {x: x, y: keep.map(function (i, k) { return test(i) ? p50[k] : null; }), customdata: custom, name: name,
            mode: "markers", type: "scatter", marker: {symbol: symbol, color: color, size: size, line: {width: 1, color: "#333"}},
            hovertemplate: hover("ms")};
  }
  function draw(id, traces, unit, extra) {
    var el = document.getElementById(id);
    if (!el) return;
    var layout = Object.assign({xaxis: {type: "date", title: {text: "night (UTC)"}}, yaxis: {title: {text: unit}},
                                hovermode: "closest", height: 340, margin: {t: 30, l: 70, r: 20, b: 50},
                                legend: {orientation: "h"}}, extra || {});
    Plotly.newPlot(el, traces, layout, config);
    el.on("plotly_click", function (ev) { var link = ev.points[0].customdata[2]; if (link) window.location.href = link; });
  }
  var changes = JSON.parse(document.getElementById("series-changes").textContent);
  var shapes = changes.map(function (m) {
    return {type: "line", xref: "x", yref: "paper", x0: m.x, x1: m.x, y0: 0, y1: 1, line: {dash: "dot", color: "#8e44ad"}};
  });
  var notes = changes.map(function (m) {
    return {x: m.x, yref: "paper", y: 1, text: t(m.label), showarrow: false, xanchor: "left", font: {size: 11, color: "#8e44ad"}};
  });
  draw("latency", [
    line("p50 (bars: the process runs' lowest and highest median)", p50, "ms", {error_y: {type: "data", symmetric: false,
         array: hi.map(function (h, k) { return h === null ? 0 : h - p50[k]; }),
         arrayminus: lo.map(function (l, k) { return l === null ? 0 : p50[k] - l; }), color: "#7f8c8d"}}),
    marks("interfered", function (i) { return c.flagged[i] > 0; }, "x", "#e67e22", 10),
    marks("regressed", function (i) { return c.regressed[i] && !c.confirmed[i]; }, "diamond", "#e74c3c", 11),
    marks("confirmed regression", function (i) { return c.regressed[i] && c.confirmed[i]; }, "star", "#c0392b", 16)
  ], "ms", {shapes: shapes, annotations: notes, xaxis: {type: "date", title: {text: "night (UTC)"}, rangeslider: {}}});
  function mib(name) { return col(name).map(function (v) { return v === null ? null : v / 1024; }); }
  draw("load", [line("load", col("load"), "ms")], "ms");
  draw("memory", [line("peak RSS", mib("rss"), "MiB"), line("PSS", mib("pss"), "MiB"),
                  line("delegate (memory by owner)", mib("delegate").map(function (v) { return v === null ? null : v / 1024; }),
                       "MiB")], "MiB");
  draw("energy", [line("energy per inference above idle", col("uj"), "uJ")], "uJ");
  draw("llm", [line("time to first token", col("ttft"), "ms"), line("decode tokens/s", col("tps"), "tokens/s", {yaxis: "y2"})],
       "ms", {yaxis2: {title: {text: "tokens/s"}, overlaying: "y", side: "right"}});
  // per-layer trends: the layers that cost most in the newest night, then those that moved most (newest / oldest)
  var layers = d.layer_names.map(function (name, j) {
    var values = keep.map(function (i) { var v = c.layers[i][j]; return v === undefined ? null : v; });
    var known = values.filter(function (v) { return v !== null && v > 0; });
    return {name: name, values: values, last: values[values.length - 1] || 0,
            moved: known.length ? Math.abs(known[known.length - 1] / known[0] - 1) : 0, timed: known.length > 0};
  }).filter(function (l) { return l.timed; });  // kernels under the timer's resolution (0 ms) are no trend
  if (!layers.length) {
    var none = document.getElementById("layers");
    if (none) { none.previousElementSibling.remove(); none.remove(); }
  }
  var costly = layers.slice().sort(function (a, b) { return b.last - a.last; }).slice(0, TOP_HALF);
  var moved = layers.filter(function (l) { return costly.indexOf(l) < 0; })
                    .sort(function (a, b) { return b.moved - a.moved; }).slice(0, TOP_LINES - costly.length);
  draw("layers", costly.concat(moved).map(function (l) { return line(l.name, l.values, "ms"); }), "ms");
})();
""".replace("TOP_HALF", str(TOP_LAYER_LINES // 2)).replace("TOP_LINES", str(TOP_LAYER_LINES))
