// The server page's latency chart: data from the json_script element (never inlined as code).
// The x axis is time (checks two seconds or four minutes apart are drawn that far apart), labelled in the
// operator's zone (data-tz); only answered checks are drawn as latency; a check with no answer is a gap
// in the line and a red cross on the axis whose tooltip says what went wrong.
(function () {
  "use strict";
  var canvas = document.getElementById("latency-chart");
  var source = document.getElementById("latency-data");
  if (!canvas || !source || typeof Chart === "undefined") { return; }
  var data = JSON.parse(source.textContent);
  var tz = canvas.dataset.tz || "UTC";
  var COLORS = { latency: "#4a7ab5", mean: "#4a7ab5", p95: "#e8c547", max: "#9b1c1c" };
  var CATEGORY = { normal: "#3a9d4f", delay: "#e8c547", disconnect: "#c8352b", error: "#9b1c1c" };
  var FULL = new Intl.DateTimeFormat("sv-SE", {
    timeZone: tz, year: "numeric", month: "2-digit", day: "2-digit",
    hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false
  });
  var SHORT = new Intl.DateTimeFormat("sv-SE", { timeZone: tz, hour: "2-digit", minute: "2-digit", hour12: false });
  var DAY = new Intl.DateTimeFormat("sv-SE", { timeZone: tz, month: "2-digit", day: "2-digit", hour: "2-digit", hour12: false });

  function ago(t) {
    var s = Math.max(0, Math.round((Date.now() - t) / 1000));
    if (s < 90) { return s + " s ago"; }
    if (s < 5400) { return Math.round(s / 60) + " min ago"; }
    if (s < 172800) { return Math.round(s / 3600) + " h ago"; }
    return Math.round(s / 86400) + " days ago";
  }

  var times = data.labels.map(function (iso) { return Date.parse(iso); });
  var datasets = Object.keys(data.series).map(function (name) {
    var values = data.series[name];
    var ds = {
      label: name + " (ms)", borderColor: COLORS[name] || "#444", backgroundColor: COLORS[name] || "#444",
      borderWidth: 1.5, pointRadius: data.kind === "checks" ? 3 : 0, spanGaps: false, tension: 0.1,
      data: times.map(function (t, i) { return { x: t, y: values[i] }; })
    };
    if (data.kind === "checks") {
      ds.pointBackgroundColor = data.categories.map(function (c) { return CATEGORY[c] || "#888"; });
    }
    return ds;
  });

  // Failures: each check with no answer, or each hour with failed checks, as a marker on the axis.
  var failures = [];
  if (data.kind === "checks") {
    data.series.latency.forEach(function (v, i) {
      if (v === null) { failures.push({ x: times[i], y: 0, what: data.kinds[i] + " (" + data.categories[i] + ")" }); }
    });
  } else if (data.failed) {
    times.forEach(function (t, i) {
      var d = data.failed.disconnect[i] || 0, e = data.failed.error[i] || 0;
      if (d + e) {
        var parts = [];
        if (d) { parts.push(d + " disconnect"); }
        if (e) { parts.push(e + " error"); }
        failures.push({ x: t, y: 0, what: parts.join(", ") + " in this hour" });
      }
    });
  }
  if (failures.length) {
    datasets.push({
      type: "scatter", label: "failed checks", data: failures, pointStyle: "crossRot", pointRadius: 7,
      pointHoverRadius: 9, borderColor: "#c8352b", backgroundColor: "#c8352b", borderWidth: 2
    });
  }
  var span = times.length ? times[times.length - 1] - times[0] : 0;
  // Ticks on round times (every 5 min, 3 h, a day …): the smallest step that gives at most ten.
  var MIN = 60000, STEPS = [MIN, 5 * MIN, 10 * MIN, 15 * MIN, 30 * MIN, 60 * MIN, 180 * MIN, 360 * MIN, 720 * MIN, 1440 * MIN, 2880 * MIN, 10080 * MIN];
  var step = STEPS.filter(function (s) { return span / s <= 10; })[0] || STEPS[STEPS.length - 1];
  var xmin = times.length ? Math.floor(times[0] / step) * step : undefined;
  var xmax = times.length ? Math.ceil(times[times.length - 1] / step) * step : undefined;

  window.latencyChart = new Chart(canvas, {
    type: "line",
    data: { datasets: datasets },
    options: {
      responsive: true, maintainAspectRatio: false, animation: false, parsing: true,
      scales: {
        y: { beginAtZero: true, title: { display: true, text: "ms" } },
        x: {
          type: "linear", title: { display: true, text: tz }, min: xmin, max: xmax,
          ticks: { stepSize: step, maxTicksLimit: 12, callback: function (v) { return (span > 86400000 ? DAY : SHORT).format(new Date(v)); } }
        }
      },
      plugins: {
        legend: { display: datasets.length > 1 },
        tooltip: {
          callbacks: {
            title: function (items) { return items.length ? FULL.format(new Date(items[0].parsed.x)) + " " + tz : ""; },
            label: function (ctx) {
              if (ctx.raw && ctx.raw.what) { return "failed: " + ctx.raw.what; }
              var extra = data.kind === "checks" ? " · " + data.kinds[ctx.dataIndex] : "";
              return ctx.dataset.label + ": " + ctx.parsed.y + extra;
            },
            footer: function (items) { return items.length ? ago(items[0].parsed.x) : ""; }
          }
        }
      }
    }
  });
})();
