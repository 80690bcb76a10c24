// The incident page's timings chart: the failing answer's phases (DNS, connect, TLS, first byte, body) as one
// stacked horizontal bar, in the server page's chart style (Chart.js, data from a json_script element, never
// inlined as code). A phase not reached is left out.
(function () {
  "use strict";
  var canvas = document.getElementById("timings-chart");
  var source = document.getElementById("timings-data");
  if (!canvas || !source || typeof Chart === "undefined") { return; }
  var timings = JSON.parse(source.textContent);
  var PHASES = [["dns", "DNS", "#8a8a8a"], ["connect", "connect", "#4a7ab5"], ["tls", "TLS", "#6f5bb5"],
                ["first_byte", "first byte", "#e8c547"], ["body", "body", "#3a9d4f"]];
  var datasets = PHASES.filter(function (p) { return timings[p[0]] !== null && timings[p[0]] !== undefined; })
    .map(function (p) {
      return { label: p[1] + " (ms)", data: [timings[p[0]]], backgroundColor: p[2], borderColor: p[2], borderWidth: 1 };
    });
  window.timingsChart = new Chart(canvas, {
    type: "bar",
    data: { labels: ["this answer"], datasets: datasets },
    options: {
      indexAxis: "y", responsive: true, maintainAspectRatio: false, animation: false,
      scales: { x: { stacked: true, beginAtZero: true, title: { display: true, text: "ms" } }, y: { stacked: true } },
      plugins: { legend: { display: true } }
    }
  });
})();
