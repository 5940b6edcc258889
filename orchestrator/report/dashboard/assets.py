"""What every page of the site shares, written once into DIR/assets/: plotly.js (from the plotly wheel: the site
needs no network), the style sheet and the series pages' one script (each page carries only its data)."""

from __future__ import annotations

from pathlib import Path

PLOTLY = "assets/plotly.min.js"
STYLE = "assets/dashboard.css"
SERIES_SCRIPT = "assets/series.js"


def plotly_js() -> bytes:
    """plotly.js as the installed plotly package ships it."""
    import plotly  # the package only to find its bundled file: nothing of it runs here

    return (Path(plotly.__file__).parent / "package_data" / "plotly.min.js").read_bytes()


CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.2em 2em; color: #222; }
nav a { margin-right: 1.2em; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; }
th, td { padding: 3px 8px; border-bottom: 1px solid #ddd; text-align: left; vertical-align: middle; }
th { background: #f4f4f4; }
tr.group th { background: #e8eef6; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.verdict { padding: 1px 6px; border-radius: 3px; background: #eee; white-space: nowrap; }
.verdict.regressed { background: #c0392b; color: #fff; }
.verdict.improved { background: #1e8449; color: #fff; }
.verdict.inconclusive { background: #f5cba7; }
.confirmed { color: #c0392b; font-weight: 600; }
.filters label { margin-right: 1em; }
.empty { font-size: 1.2em; color: #555; }
.chart { width: 100%; max-width: 1100px; }
small, .muted { color: #666; }
"""

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
  function apply() {
    var want = {};
    selects.forEach(function (s) { if (s.value) want[s.getAttribute("data-filter")] = s.value; });
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
  var d = JSON.parse(document.getElementById("series-data").textContent), p = d.points;
  var custom = p.x.map(function (_, i) { return [p.run[i], p.commit[i] || "-", p.link[i] || ""]; });
  var config = {responsive: true, displaylogo: false};
  function pick(values, keep) { return values.map(function (v, i) { return keep(i) ? v : null; }); }
  function hover(unit) {
    return "%{y:.4g} " + unit + "<br>run %{customdata[0]}<br>commit %{customdata[1]}<extra>%{fullData.name}</extra>";
  }
  function line(name, values, unit, extra) {
    return Object.assign({x: p.x, y: values, customdata: custom, name: name, mode: "lines+markers", type: "scatter",
                          connectgaps: true, hovertemplate: hover(unit)}, extra || {});
  }
  function marks(name, keep, symbol, color, size) {
    return {x: p.x, y: pick(p.p50, keep), customdata: custom, name: name, mode: "markers", type: "scatter",
            marker: {symbol: symbol, color: color, size: size, line: {width: 1, color: "#333"}},
            hovertemplate: hover("ms")};
  }
  function draw(id, traces, unit, extra) {
    var el = document.getElementById(id);
    if (!el) return;
    var layout = Object.assign({xaxis: {type: "date", title: {text: "night"}}, yaxis: {title: {text: unit}},
                                hovermode: "closest", height: 340, margin: {t: 30, l: 70, r: 20, b: 50},
                                legend: {orientation: "h"}}, extra || {});
    Plotly.newPlot(el, traces, layout, config);
    el.on("plotly_click", function (ev) { var link = ev.points[0].customdata[2]; if (link) window.location.href = link; });
  }
  var shapes = d.changes.map(function (c) {
    return {type: "line", xref: "x", yref: "paper", x0: c.x, x1: c.x, y0: 0, y1: 1, line: {dash: "dot", color: "#8e44ad"}};
  });
  var notes = d.changes.map(function (c) {
    return {x: c.x, yref: "paper", y: 1, text: c.label, showarrow: false, xanchor: "left", font: {size: 11, color: "#8e44ad"}};
  });
  draw("latency", [
    line("p50 (interval: the process runs' medians)", p.p50, "ms",
         {error_y: {type: "data", symmetric: false, array: p.hi_err, arrayminus: p.lo_err, color: "#7f8c8d"}}),
    marks("interfered", function (i) { return p.flagged[i]; }, "x", "#e67e22", 10),
    marks("regressed", function (i) { return p.regressed[i] && !p.confirmed[i]; }, "diamond", "#e74c3c", 11),
    marks("confirmed regression", function (i) { return p.confirmed[i]; }, "star", "#c0392b", 16)
  ], "ms", {shapes: shapes, annotations: notes, xaxis: {type: "date", title: {text: "night"}, rangeslider: {}}});
  if (d.load) draw("load", [line("load", p.load, "ms")], "ms");
  if (d.memory) draw("memory", [line("peak RSS", p.rss_mib, "MiB"), line("PSS", p.pss_mib, "MiB")], "MiB");
  if (d.llm) draw("llm", [line("time to first token", p.ttft, "ms"),
                          line("decode tokens/s", p.tps, "tokens/s", {yaxis: "y2"})], "ms",
                  {yaxis2: {title: {text: "tokens/s"}, overlaying: "y", side: "right"}});
  if (d.layers.length) draw("layers", d.layers.map(function (l) { return line(l.name, l.values, "ms"); }), "ms");
})();
"""
