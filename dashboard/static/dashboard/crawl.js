// The crawl page's "URLs by state over time": data from the json_script element (never inlined as code).
(function () {
  "use strict";
  var canvas = document.getElementById("history-chart");
  var source = document.getElementById("history-data");
  if (!canvas || !source || typeof Chart === "undefined") { return; }
  var data = JSON.parse(source.textContent);
  var COLORS = {
    init: "#4a7ab5", visited: "#3a9d4f", noresponse1: "#e3a21a", noresponse2: "#d9731c",
    dead: "#c8352b", excluded: "#888888"
  };
  var spanDays = data.labels.length > 1 &&
    new Date(data.labels[data.labels.length - 1]) - new Date(data.labels[0]) > 20 * 3600 * 1000;

  function label(iso) {
    var d = new Date(iso);
    return spanDays ? d.toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" })
      : d.toLocaleTimeString();
  }

  // States that never held a URL in the window stay out of the legend.
  var datasets = Object.keys(data.series).filter(function (name) {
    return data.series[name].some(function (v) { return v > 0; });
  }).map(function (name) {
    var color = COLORS[name] || "#444";
    return {
      label: name, data: data.series[name], borderColor: color, backgroundColor: color,
      borderWidth: 1.5, pointRadius: data.labels.length > 60 ? 0 : 2, tension: 0.1
    };
  });

  window.historyChart = new Chart(canvas, {
    type: "line",
    data: { labels: data.labels.map(label), datasets: datasets },
    options: {
      responsive: true, maintainAspectRatio: false, animation: false,
      interaction: { mode: "index", intersect: false },
      scales: { y: { beginAtZero: true, title: { display: true, text: "URLs" } }, x: { ticks: { maxTicksLimit: 12 } } }
    }
  });
})();
