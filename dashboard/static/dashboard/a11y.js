// A table wider than the screen scrolls in its own box (dashboard.css): make such a box reachable by
// keyboard (tabindex) and named, so it can be scrolled without a mouse.
(function () {
  "use strict";
  function mark() {
    document.querySelectorAll("main table").forEach(function (t) {
      var scrolls = t.scrollWidth > t.clientWidth + 1 && getComputedStyle(t).overflowX !== "visible";
      if (scrolls && !t.hasAttribute("tabindex")) {
        t.setAttribute("tabindex", "0");
        if (!t.hasAttribute("aria-label")) {
          var h = t.closest("section") && t.closest("section").querySelector("h2, h3");
          t.setAttribute("aria-label", (h ? h.textContent + ": " : "") + "table, scrolls sideways");
        }
      }
    });
  }
  mark();
  window.addEventListener("resize", mark);
})();
