// The server grid and list refresh themselves: every few seconds they fetch the same page of servers as
// JSON and update each tile's (or row's) badge, latency and last check in place. Only textContent and class names are
// set, never HTML, so nothing a server sends can become markup. A tile set that changed (a server
// added, a filter's members moved) reloads the page.
(function () {
  "use strict";
  var grid = document.getElementById("grid");
  if (!grid) { return; }
  var url = grid.dataset.json;
  var every = Math.max(5, parseInt(grid.dataset.refresh, 10) || 30) * 1000;
  var TZ = grid.dataset.tz || "UTC";
  // The pages' one time format (crawlcore/templatetags/times.py): YYYY-MM-DD HH:MM:SS in the operator's zone.
  var STAMP = new Intl.DateTimeFormat("sv-SE", {
    timeZone: TZ, year: "numeric", month: "2-digit", day: "2-digit",
    hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false
  });
  var STATUSES = ["error", "disconnect", "unconfirmed", "delay", "stale", "maintenance", "unknown", "normal", "unmonitored"];

  function latency(ms) {
    if (ms === null || ms === undefined) { return "–"; }
    return ms >= 1000 ? (ms / 1000).toFixed(2) + " s" : Math.round(ms) + " ms";
  }

  // The same words as the server's (crawlcore/templatetags/times.py, ago_text), redrawn every second.
  function ago(iso) {
    if (!iso) { return "never checked"; }
    var s = Math.max(0, Math.floor((Date.now() - Date.parse(iso)) / 1000));
    if (s < 60) { return s + " s ago"; }
    if (s < 3600) { return Math.floor(s / 60) + " min ago"; }
    if (s < 172800) { return Math.floor(s / 3600) + " h ago"; }
    return Math.floor(s / 86400) + " days ago";
  }

  function tick() {
    grid.querySelectorAll("[data-field=last_check][title]").forEach(function (el) {
      el.textContent = ago(el.title);
    });
  }
  window.setInterval(tick, 1000);

  function setStatus(el, status) {
    STATUSES.forEach(function (s) { el.classList.remove(s); });
    el.classList.add(status);
  }

  function setText(el, field, text) {
    var f = el.querySelector("[data-field=" + field + "]");
    if (f) { f.textContent = text; }
  }

  // The list: select all shown, the count of selected servers, and the collapsed groups kept in the URL
  // (?closed=a,b) so a view can be bookmarked.
  var bulk = document.getElementById("bulk");
  function selected() { return grid.querySelectorAll("input[name=ids]:checked").length; }
  function count() {
    var c = document.getElementById("bulk-count");
    if (c) { var n = selected(); c.textContent = n ? n + " selected" : "none selected"; }
  }
  grid.addEventListener("change", count);
  if (bulk) {
    var all = bulk.querySelector("input.selall");
    if (all) {
      all.addEventListener("change", function () {
        grid.querySelectorAll("input[name=ids]").forEach(function (b) { b.checked = all.checked; });
        count();
      });
    }
    bulk.addEventListener("submit", function (e) {
      if (!selected()) { e.preventDefault(); var c = document.getElementById("bulk-count"); if (c) { c.textContent = "select servers first"; } }
    });
  }
  grid.querySelectorAll("details.lgroup").forEach(function (d) {
    d.addEventListener("toggle", function () {
      var closed = [];
      grid.querySelectorAll("details.lgroup").forEach(function (x) { if (!x.open) { closed.push(x.dataset.group); } });
      var u = new URL(window.location.href);
      if (closed.length) { u.searchParams.set("closed", closed.join(",")); } else { u.searchParams.delete("closed"); }
      window.history.replaceState(null, "", u.toString());
    });
  });

  function apply(data) {
    if (selected()) { return; }  // an operator choosing rows: no reload under their hand
    var tiles = grid.querySelectorAll("[data-server]");
    if (tiles.length !== data.tiles.length) { window.location.reload(); return; }
    for (var i = 0; i < data.tiles.length; i++) {
      var t = data.tiles[i], el = tiles[i];
      if (String(t.id) !== el.dataset.server) { window.location.reload(); return; }
      setStatus(el, t.status);
      var badge = el.querySelector("[data-field=status]");
      setStatus(badge, t.status);
      badge.textContent = t.status;
      setText(el, "latency", latency(t.latency_ms));
      setText(el, "note", t.note || "");
      setText(el, "cert", t.cert || "");
      var up = el.querySelector("[data-field=uptime]");
      var upText = t.uptime_24h === null || t.uptime_24h === undefined ? "–" : t.uptime_24h.toFixed(2) + "\u00a0%";
      if (up && up.firstChild) { up.firstChild.textContent = upText + (up.children.length ? " " : ""); }
      var bar = el.querySelector("[data-field=bar]");
      if (bar) {
        bar.replaceChildren.apply(bar, (t.bar || []).map(function (c) {
          var i = document.createElement("i");
          i.className = c;
          return i;
        }));
      }
      var when = el.querySelector("[data-field=last_check]");
      when.textContent = ago(t.last_check_at);
      if (t.last_check_at) { when.title = t.last_check_at; }
    }
    Object.keys(data.counts).forEach(function (s) {
      var c = document.querySelector("[data-count='" + s + "']");
      if (c) { c.textContent = data.counts[s]; }
    });
    var stamp = document.getElementById("refreshed");
    // The figures are as of when the server counted them (it keeps them a few seconds), not of now.
    if (stamp) { stamp.textContent = STAMP.format(new Date(data.generated_at || Date.now())) + " " + TZ; }
  }

  function poll() {
    fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
      .then(function (r) {
        if (r.redirected || r.status === 401 || r.status === 403) { window.location.reload(); return null; }
        return r.ok ? r.json() : null;
      })
      .then(function (data) { if (data) { apply(data); } })
      .catch(function () { /* the next poll tries again */ })
      .finally(function () { window.setTimeout(poll, every); });
  }

  window.setTimeout(poll, every);
})();
