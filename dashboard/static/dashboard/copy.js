// Copy buttons (a heartbeat's ping URLs): the text of the element named by data-copy, to the clipboard.
(function () {
  "use strict";
  document.querySelectorAll("button.copy[data-copy]").forEach(function (b) {
    b.addEventListener("click", function () {
      var el = document.getElementById(b.dataset.copy);
      if (!el) { return; }
      var done = function () { b.textContent = "Copied"; window.setTimeout(function () { b.textContent = "Copy"; }, 1500); };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(el.textContent).then(done, function () { select(el); });
      } else { select(el); b.textContent = "Selected: Ctrl-C"; }
    });
  });
  function select(el) {
    var r = document.createRange();
    r.selectNodeContents(el);
    var s = window.getSelection();
    s.removeAllRanges();
    s.addRange(r);
  }
})();
