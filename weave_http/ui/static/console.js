// Weave console: the few things a page does by itself. Everything works without it.
"use strict";
(function () {
  // The instance list refreshes its rows every 5 s (same origin, the same filters).
  var table = document.querySelector("table[data-refresh]");
  if (table) {
    var url = table.getAttribute("data-refresh");
    setInterval(function () {
      if (document.hidden) return;
      fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (!html) return;
          var body = document.getElementById("rows");
          var holder = document.createElement("table");
          holder.innerHTML = html;
          var fresh = holder.querySelector("tbody");
          if (body && fresh && body.innerHTML !== fresh.innerHTML) {
            body.replaceWith(fresh);
            table.setAttribute("data-refreshed", String(Date.now()));
          }
        })
        .catch(function () { /* the next round retries */ });
    }, 5000);
  }
  // A step opened from the graph: move the keyboard focus to its records.
  if (location.hash === "#step-detail") {
    var detail = document.getElementById("step-detail");
    if (detail) detail.focus();
  }
})();
