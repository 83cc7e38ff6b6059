// dgdrctl ui: live updates over server-sent events and the promote confirmation. The pages work
// without this script (they are rendered on the server); it only keeps them fresh.
(function () {
  "use strict";
  var rows = document.getElementById("request-rows");
  var live = document.querySelector("[data-live-request]");
  if (rows || live) {
    var es = new EventSource("/events");
    var status = document.getElementById("live");
    es.addEventListener("requests", function (e) {
      if (rows) { rows.innerHTML = e.data; } // rendered and escaped by the server's template
      if (status) { status.textContent = "live: updated " + new Date().toLocaleTimeString(); }
    });
    es.addEventListener("failure", function (e) {
      if (status) { status.textContent = "live updates failed: " + e.data; }
    });
    if (live) {
      var key = live.getAttribute("data-live-request");
      var pending = false;
      es.addEventListener("changed", function (e) {
        // A running search writes its progress often: reload at most every two seconds.
        if (pending || e.data.split("\n").indexOf(key) < 0) { return; }
        pending = true;
        window.setTimeout(function () {
          if (!document.querySelector("input:focus")) { window.location.reload(); } else { pending = false; }
        }, 2000);
      });
    }
    es.onerror = function () {
      if (status) { status.textContent = "live: reconnecting…"; }
    };
  }
  var confirmForm = document.getElementById("confirm-form");
  if (confirmForm) {
    confirmForm.addEventListener("submit", function (e) {
      if (!window.confirm(confirmForm.getAttribute("data-confirm"))) { e.preventDefault(); }
    });
  }
})();
