(function () {
  "use strict";
  var bar = document.getElementById("filters");
  if (!bar) { return; }
  bar.hidden = false;
  var want = "ALL", words = "";
  var buttons = bar.querySelectorAll("button[data-show]");
  var search = bar.querySelector("input");
  function apply() {
    var on = want !== "ALL" || words !== "";
    document.body.classList.toggle("filtered", on);
    document.querySelectorAll("section.sect").forEach(function (sec) {
      var any = false;
      sec.querySelectorAll("details.rule").forEach(function (d) {
        var ok = (want === "ALL" || d.dataset.outcome === want) &&
          (words === "" || d.textContent.toLowerCase().indexOf(words) >= 0);
        d.classList.toggle("shown", ok);
        if (ok) {
          any = true;
          if (on) { d.open = true; }
        }
      });
      sec.querySelectorAll("details.skips").forEach(function (g) {
        var shown = g.querySelectorAll("details.rule.shown").length > 0;
        g.classList.toggle("shown", shown);
        if (shown && on) { g.open = true; }
      });
      sec.classList.toggle("shown", any);
    });
  }
  buttons.forEach(function (b) {
    b.addEventListener("click", function () {
      want = b.dataset.show;
      buttons.forEach(function (o) { o.setAttribute("aria-pressed", String(o === b)); });
      apply();
    });
  });
  if (search) {
    search.addEventListener("input", function () { words = search.value.trim().toLowerCase(); apply(); });
  }
  bar.querySelector("button[data-open]").addEventListener("click", function () {
    document.querySelectorAll("details").forEach(function (d) { d.open = true; });
  });
  bar.querySelector("button[data-fold]").addEventListener("click", function () {
    document.querySelectorAll("details").forEach(function (d) { d.open = false; });
  });
})();
