// @ts-check
// A classic script that runs before the plugin's modules: if they fail to load or to start (a missing file, a
// script error), it says so in the frame instead of leaving "Starting…" on screen for good.
(function () {
  "use strict";
  var GIVE_UP_MS = 20000;
  var shown = false;

  /** @param {string} what */
  function show(what) {
    if (shown || /** @type {{codapRelayStarted?: boolean}} */ (/** @type {unknown} */ (window)).codapRelayStarted) return;
    shown = true;
    var render = function () {
      var status = document.getElementById("status");
      var notice = document.getElementById("notice");
      if (status) {
        status.textContent = "Not connected";
        status.className = "pill pill-error";
      }
      if (notice) {
        notice.textContent =
          "The plugin could not start: " + what + ". Reload the plugin (or CODAP) to try again; if this keeps " +
          "happening, restart codap-relay or update it.";
        notice.hidden = false;
      }
      var codap = document.getElementById("codap-status");
      if (codap) codap.textContent = "CODAP: not connected";
    };
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", render);
    else render();
  }

  // Capture phase: a script element that fails to load fires a non-bubbling error event at itself.
  window.addEventListener(
    "error",
    function (event) {
      var target = /** @type {Element | null} */ (event.target);
      if (target && target.tagName === "SCRIPT") {
        show("some of its files did not load");
      } else if (event.message) {
        show(event.message);
      }
    },
    true,
  );
  window.addEventListener("unhandledrejection", function (event) {
    var reason = event.reason;
    show((reason && reason.message) || String(reason));
  });
  setTimeout(function () {
    show("it took more than " + GIVE_UP_MS / 1000 + " s to load");
  }, GIVE_UP_MS);
})();
