// The dashboard's live updates (ours; no library): the page's live section (#live) is
// swapped for the fragment the server sends over server-sent events whenever what it shows
// changed. Without JavaScript the page still shows everything; #refresh-link reloads it.
// Only textContent and server-rendered (escaped) HTML are written; nothing is evaluated.
(function () {
  "use strict";

  function start() {
    var section = document.getElementById("live");
    var state = document.getElementById("live-state");
    if (!section || typeof window.EventSource === "undefined") {
      return;
    }

    function say(kind, text) {
      if (state) {
        state.setAttribute("data-state", kind);
        state.textContent = text;
      }
    }

    function swap(html, version) {
      // keep the disclosures the visitor opened (a cancel being confirmed stays open)
      var open = [];
      section.querySelectorAll("details[open][id]").forEach(function (d) {
        open.push(d.id);
      });
      section.innerHTML = html;
      open.forEach(function (id) {
        var found = document.getElementById(id);
        if (found) {
          found.open = true;
        }
      });
      if (version) {
        section.setAttribute("data-version", version);
      }
    }

    var source = new EventSource(section.getAttribute("data-live-url"));
    source.addEventListener("open", function () {
      say("on", "Live: updates within 2 s.");
    });
    source.addEventListener("update", function (event) {
      swap(event.data, event.lastEventId);
      say("on", "Live: updates within 2 s.");
    });
    source.addEventListener("problem", function (event) {
      say("problem", event.data);
    });
    ["gone", "signedout"].forEach(function (name) {
      source.addEventListener(name, function (event) {
        say("off", event.data);
        source.close();
      });
    });
    source.addEventListener("error", function () {
      if (source.readyState !== EventSource.CLOSED) {
        say("reconnecting", "Reconnecting…");
      }
    });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
}());
