// The server page's latency chart: data from the json_script element (never inlined as code).
(function () {
  "use strict";
  var canvas = document.getElementById("latency-chart");
  var source = document.getElementById("latency-data");
  if (!canvas || !source || typeof Chart === "undefined") { return; }
  var data = JSON.parse(source.textContent);
  var COLORS = { latency: "#4a7ab5", mean: "#4a7ab5", p95: "#e3a21a", max: "#c8352b" };
  var CATEGORY = { normal: "#3a9d4f", delay: "#e3a21a", disconnect: "#7b3fa0", error: "#c8352b" };

  function label(iso) {
    var d = new Date(iso);
    return data.kind === "checks" ? d.toLocaleTimeString() : d.toLocaleString([], { month: "short", day: "numeric", hour: "2-digit" });
  }

  var datasets = Object.keys(data.series).map(function (name) {
    var ds = {
      label: name + " (ms)", data: data.series[name], borderColor: COLORS[name] || "#444",
      backgroundColor: COLORS[name] || "#444", borderWidth: 1.5, pointRadius: data.kind === "checks" ? 2 : 0,
      spanGaps: false, tension: 0.1
    };
    if (data.kind === "checks" && data.categories.length) {
      ds.pointBackgroundColor = data.categories.map(function (c) { return CATEGORY[c] || "#888"; });
      ds.pointRadius = 3;
    }
    return ds;
  });

  window.latencyChart = new Chart(canvas, {
    type: "line",
    data: { labels: data.labels.map(label), datasets: datasets },
    options: {
      responsive: true, maintainAspectRatio: false, animation: false,
      scales: { y: { beginAtZero: true, title: { display: true, text: "ms" } }, x: { ticks: { maxTicksLimit: 12 } } },
      plugins: { legend: { display: datasets.length > 1 } }
    }
  });
})();
