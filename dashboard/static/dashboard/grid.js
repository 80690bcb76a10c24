// The server grid refreshes itself: every few seconds it fetches the same page of tiles as JSON and
// updates each tile's badge, latency and last check in place. Only textContent and class names are
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

  function apply(data) {
    var tiles = grid.querySelectorAll(".tile[data-server]");
    if (tiles.length !== data.tiles.length) { window.location.reload(); return; }
    for (var i = 0; i < data.tiles.length; i++) {
      var t = data.tiles[i], el = tiles[i];
      if (String(t.id) !== el.dataset.server) { window.location.reload(); return; }
      setStatus(el, t.status);
      var badge = el.querySelector("[data-field=status]");
      setStatus(badge, t.status);
      badge.textContent = t.status;
      el.querySelector("[data-field=latency]").textContent = latency(t.latency_ms);
      el.querySelector("[data-field=note]").textContent = t.note || "";
      el.querySelector("[data-field=cert]").textContent = t.cert || "";
      var up = el.querySelector("[data-field=uptime]");
      up.firstChild.textContent = (t.uptime_24h === null || t.uptime_24h === undefined ? "–" : t.uptime_24h.toFixed(2) + " %") + " ";
      var bar = el.querySelector("[data-field=bar]");
      bar.replaceChildren.apply(bar, (t.bar || []).map(function (c) {
        var i = document.createElement("i");
        i.className = c;
        return i;
      }));
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
