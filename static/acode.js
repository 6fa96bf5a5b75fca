/* acode dashboard: the little the server cannot do. htmx and its ws extension do the rest.
 *  - keep "time in role" counters ticking between pushes (waits in flight every second);
 *  - show the state of the live connection;
 *  - submit filter forms when a select changes.
 */
(function () {
  "use strict";

  function duration(seconds) {
    seconds = Math.max(0, Math.floor(seconds));
    if (seconds < 60) return seconds + "s";
    var minutes = Math.floor(seconds / 60);
    if (minutes < 60) return minutes + "m";
    var hours = Math.floor(minutes / 60);
    minutes = minutes % 60;
    if (hours < 24) return hours + "h " + (minutes < 10 ? "0" : "") + minutes + "m";
    return Math.floor(hours / 24) + "d " + (hours % 24) + "h";
  }

  // To the second under an hour: what a wait in flight shows (data-precise).
  function precise(seconds) {
    seconds = Math.max(0, Math.floor(seconds));
    if (seconds < 60 || seconds >= 3600) return duration(seconds);
    var rest = seconds % 60;
    return Math.floor(seconds / 60) + "m " + (rest < 10 ? "0" : "") + rest + "s";
  }

  function tick() {
    var now = Date.now();
    document.querySelectorAll("time[data-since]").forEach(function (el) {
      var at = Date.parse(el.getAttribute("data-since"));
      if (isNaN(at)) return;
      var seconds = (now - at) / 1000;
      el.textContent = el.hasAttribute("data-precise") ? precise(seconds) : duration(seconds);
    });
  }

  function setLive(state, text) {
    var el = document.getElementById("live");
    if (!el) return;
    el.setAttribute("data-state", state);
    var label = el.querySelector(".live-text");
    if (label) label.textContent = text;
  }

  document.addEventListener("htmx:wsConnecting", function () {
    setLive("connecting", "Connecting…");
  });
  document.addEventListener("htmx:wsOpen", function () {
    setLive("open", "Live");
  });
  document.addEventListener("htmx:wsClose", function () {
    setLive("closed", "Reconnecting…");
  });
  document.addEventListener("htmx:wsAfterMessage", function () {
    tick();
    // Tests and curious people can see when the page last heard from the server.
    document.body.setAttribute("data-last-push", String(Date.now()));
  });

  document.addEventListener("change", function (event) {
    var target = event.target;
    if (!(target instanceof HTMLSelectElement)) return;
    var form = target.closest("form[data-autosubmit]");
    if (form) form.requestSubmit();
  });

  document.addEventListener("DOMContentLoaded", tick);
  // Every second while something is waited on (a model call, a tool), else every 15 s.
  var ticks = 0;
  setInterval(function () {
    ticks += 1;
    if (document.querySelector("time[data-precise]") || ticks % 15 === 0) tick();
  }, 1000);
})();
