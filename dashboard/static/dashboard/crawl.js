// The crawl page's "URLs by state over time": data from the json_script element (never inlined as code).
// The x axis is linear in time (milliseconds), so a crawl's early per-second samples take their true
// share of the width; ticks and tooltips format the times (no date adapter needed).
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
  var times = data.labels.map(function (iso) { return Date.parse(iso); });
  var span = times.length > 1 ? times[times.length - 1] - times[0] : 0;

  // The pages' one time format, in the operator's zone (data-tz), the zone named on the axis.
  var tz = canvas.dataset.tz || "UTC";
  var SHORT = new Intl.DateTimeFormat("sv-SE", { timeZone: tz, hour: "2-digit", minute: "2-digit", hour12: false });
  var DAY = new Intl.DateTimeFormat("sv-SE", { timeZone: tz, month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", hour12: false });
  var FULL = new Intl.DateTimeFormat("sv-SE", {
    timeZone: tz, year: "numeric", month: "2-digit", day: "2-digit",
    hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false
  });

  var SECONDS = new Intl.DateTimeFormat("sv-SE", { timeZone: tz, hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });

  // Precise enough that eight ticks over the span read differently: seconds for a crawl of minutes.
  function label(ms) {
    var format = span > 20 * 3600 * 1000 ? DAY : span > 15 * 60 * 1000 ? SHORT : SECONDS;
    return format.format(new Date(ms));
  }

  function ago(ms) {
    var s = Math.max(0, Math.round((Date.now() - ms) / 1000));
    return s < 90 ? s + " s ago" : s < 5400 ? Math.round(s / 60) + " min ago" : Math.round(s / 3600) + " h ago";
  }

  // States that never held a URL in the window stay out of the legend.
  var datasets = Object.keys(data.series).filter(function (name) {
    return data.series[name].some(function (v) { return v > 0; });
  }).map(function (name) {
    var color = COLORS[name] || "#444";
    return {
      label: name, borderColor: color, backgroundColor: color, borderWidth: 1.5,
      pointRadius: times.length > 60 ? 0 : 2, tension: 0.1,
      data: data.series[name].map(function (v, i) { return { x: times[i], y: v }; })
    };
  });

  window.historyChart = new Chart(canvas, {
    type: "line",
    data: { datasets: datasets },
    options: {
      responsive: true, maintainAspectRatio: false, animation: false,
      interaction: { mode: "nearest", axis: "x", intersect: false },
      scales: {
        x: { type: "linear", min: times[0], max: times[times.length - 1], title: { display: true, text: tz },
             ticks: { maxTicksLimit: 8, callback: function (v, i, ticks) {
               // A label the tick before already shows is left out rather than repeated.
               var text = label(v);
               return i > 0 && label(ticks[i - 1].value) === text ? "" : text;
             } } },
        y: { beginAtZero: true, title: { display: true, text: "URLs" } }
      },
      plugins: { tooltip: { callbacks: {
        title: function (items) { return items.length ? FULL.format(new Date(items[0].parsed.x)) + " " + tz : ""; },
        footer: function (items) { return items.length ? ago(items[0].parsed.x) : ""; }
      } } }
    }
  });
})();
