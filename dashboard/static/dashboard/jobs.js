// The crawl jobs' pages refresh themselves, as the server grid does (grid.js): every few seconds they fetch
// the same figures as JSON and update each [data-field] in place, setting only textContent, attributes and
// class names, never HTML, so nothing a crawled page says can become markup. The list reloads when its
// jobs change (one added or removed); the job's page redraws its chart and reloads when the state changes
// (its controls differ by state), unless the operator is typing in one of its forms.
(function () {
  "use strict";

  function duration(s) {  // the words of jobs_tags.duration
    if (s === null || s === undefined) { return "–"; }
    if (s < 120) { return s + " s"; }
    if (s < 7200) { return Math.floor(s / 60) + " min"; }
    var m = Math.floor(s % 3600 / 60);
    return Math.floor(s / 3600) + " h " + (m < 10 ? "0" : "") + m + " min";
  }

  function set(root, field, text) {
    var el = root.querySelector("[data-field='" + field + "']");
    if (el) { el.textContent = String(text); }
    return el;
  }

  function figures(root, name, p, held, state) {
    var known = root.querySelector("[data-field=known]");
    if (known) { known.max = Math.max(1, p.known); known.value = p.done; known.textContent = p.done + " of " + p.known; }
    var budget = root.querySelector("[data-field=budget]");
    if (budget && p.max_pages) { budget.max = p.max_pages; budget.value = p.admitted; }
    set(root, "done", p.done);
    set(root, "known-n", p.known);
    set(root, "admitted", p.admitted);
    set(root, "queued", p.queued);
    set(root, "failed", p.failed);
    set(root, "excluded", p.excluded);
    set(root, "set-aside", p.set_aside);
    set(root, "rate", p.rate_per_minute);
    var eta = set(root, "eta", duration(p.eta_seconds));
    if (eta) { eta.title = p.eta_basis; }
    set(root, "basis", p.eta_basis);
    set(root, "held", held.servers);
    set(root, "held-reason", held.reason);
    var badge = root.querySelector("[data-field=state]");
    if (badge) { badge.textContent = state; badge.className = "badge job-" + state; }
  }

  function poll(url, every, apply) {
    function go() {
      fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
        .then(function (r) {
          if (r.redirected || r.status === 401 || r.status === 403 || r.status === 404) { window.location.reload(); return null; }
          return r.ok ? r.json() : null;
        })
        .then(function (data) { if (data) { apply(data); } })
        .catch(function () { /* the next poll tries again */ })
        .finally(function () { window.setTimeout(go, every); });
    }
    window.setTimeout(go, every);
  }

  // -- the list -------------------------------------------------------------------------------------------
  var list = document.getElementById("jobs");
  if (list) {
    poll(list.dataset.json, Math.max(5, parseInt(list.dataset.refresh, 10) || 30) * 1000, function (data) {
      var rows = list.querySelectorAll("tr[data-job]");
      if (rows.length !== data.jobs.length) { window.location.reload(); return; }
      var byName = {};
      rows.forEach(function (tr) { byName[tr.dataset.job] = tr; });
      data.jobs.forEach(function (j) {
        var tr = byName[j.name];
        if (!tr) { window.location.reload(); return; }
        figures(tr, j.name, j.progress, j.held, j.state);
        var last = j.last_run;
        set(tr, "last-run", !last ? "never run" : (last.ended_at ? (last.stop_reason || "ended") + ", " + last.pages + " pages" : "running"));
        tr.parentNode.appendChild(tr);  // the server's order (the sort asked for)
      });
    });
  }

  // -- a job's page ---------------------------------------------------------------------------------------
  var page = document.getElementById("job");
  if (!page) { return; }
  var canvas = document.getElementById("job-chart");
  var source = document.getElementById("job-chart-data");
  var chart = null;
  var COLORS = { done: "#3a9d4f", queued: "#4a7ab5" };

  function datasets(data) {
    var out = [];
    data.runs.forEach(function (run, i) {
      var when = i === 0 ? "this run" : "run of " + run.started_at.slice(0, 16).replace("T", " ");
      ["done", "queued"].forEach(function (what, k) {
        out.push({
          label: what + " (" + when + ")", borderColor: COLORS[what], backgroundColor: COLORS[what],
          borderWidth: i === 0 ? 2 : 1, borderDash: i === 0 ? [] : [4, 4], pointRadius: 0, tension: 0.1,
          hidden: i > 2,
          data: run.samples.map(function (s) { return { x: s[0] / 60, y: s[k + 1] }; })
        });
      });
    });
    return out;
  }

  if (canvas && source && typeof Chart !== "undefined") {
    chart = new Chart(canvas, {
      type: "line",
      data: { datasets: datasets(JSON.parse(source.textContent)) },
      options: {
        responsive: true, maintainAspectRatio: false, animation: false,
        scales: {
          y: { beginAtZero: true, title: { display: true, text: "pages" } },
          x: { type: "linear", beginAtZero: true, title: { display: true, text: "minutes since the run's start" } }
        },
        plugins: { legend: { display: true, labels: { boxWidth: 12 } } }
      }
    });
    window.jobChart = chart;
  }

  var shownState = (document.getElementById("job-state") || {}).textContent;
  poll(page.dataset.json, Math.max(5, parseInt(page.dataset.refresh, 10) || 30) * 1000, function (data) {
    var j = data.job;
    var typing = document.activeElement && /^(TEXTAREA|INPUT|SELECT)$/.test(document.activeElement.tagName);
    if (j.state !== shownState && !typing) { window.location.reload(); return; }
    figures(page, j.name, j.progress, j.held, j.state);
    if (chart) { chart.data.datasets = datasets(data.chart); chart.update(); }
  });
})();
