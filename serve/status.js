// The status page's live part: it follows /events (server-sent events, at
// most one a second while a sync runs) and updates the "Now" card in place.
// When the run it shows ends, it reloads the page once, to show the run as
// recorded. Without this script the page is complete as the server
// rendered it.
"use strict";
(function () {
  var live = document.getElementById("live");
  if (!live || live.getAttribute("data-live") !== "true" || !window.EventSource) {
    return;
  }
  var running = live.getAttribute("data-running") === "true";
  var runID = live.getAttribute("data-live-run") || "";
  var source = new EventSource("/events");

  source.addEventListener("progress", function (ev) {
    var v = JSON.parse(ev.data);
    if (running && (!v.live.running || v.live.run_id !== runID)) {
      // The run shown ended: once, show the page as the warehouse has it.
      source.close();
      window.location.reload();
      return;
    }
    running = v.live.running;
    runID = v.live.run_id;
    render(v);
  });

  function field(root, name, value) {
    var el = root.querySelector('[data-field="' + name + '"]');
    if (el) {
      el.textContent = String(value);
    }
    return el;
  }

  function cell(tr, name, value, num) {
    var td = document.createElement("td");
    td.setAttribute("data-field", name);
    if (num) {
      td.className = "num";
    }
    td.textContent = String(value);
    tr.appendChild(td);
    return td;
  }

  // following updates, outside the "Now" card, what the page rendered of
  // the running run: its streams' state, its row and the last-run card.
  function following(l) {
    l.streams.forEach(function (s) {
      var row = document.querySelector('tr[data-stream="' + s.name + '"]');
      var state = row && row.querySelector('[data-field="state"]');
      if (state) {
        state.className = "badge b-syncing";
        state.textContent = "syncing: " + s.pages + " pages" + (s.eta !== "—" ? ", ETA " + s.eta : "");
      }
    });
    var took = l.took + " so far";
    var row = document.querySelector('tr[data-run="' + l.run_id + '"]');
    if (row) {
      field(row, "requests", l.requests);
      field(row, "rows", l.rows);
      field(row, "rejected", l.rejected);
      field(row, "took", took);
    }
    var last = document.getElementById("last-run");
    if (last && document.querySelector("tr[data-run]") === row) {
      field(last, "requests", l.requests);
      field(last, "took", took);
    }
  }

  function render(v) {
    var l = v.live;
    live.setAttribute("data-running", String(l.running));
    live.setAttribute("data-live-run", l.run_id || "");
    live.setAttribute("data-version", String(l.version));
    document.getElementById("live-run").hidden = !l.running;
    document.getElementById("live-idle").hidden = l.running;
    var table = document.getElementById("live-streams");
    table.hidden = !l.running;
    var run = document.getElementById("live-run");
    field(run, "run", l.short);
    field(run, "trigger", l.trigger);
    field(run, "started", l.started);
    field(run, "took", l.took);
    field(run, "requests", l.requests);
    field(run, "budget", l.budget);
    field(run, "rows", l.rows);
    field(run, "rejected", l.rejected);
    var body = table.tBodies[0];
    while (body.firstChild) {
      body.removeChild(body.firstChild);
    }
    l.streams.forEach(function (s) {
      var tr = document.createElement("tr");
      tr.setAttribute("data-live-stream", s.name);
      var name = document.createElement("td");
      var b = document.createElement("b");
      b.textContent = s.name;
      name.appendChild(b);
      tr.appendChild(name);
      cell(tr, "line", s.line, false);
      var pages = cell(tr, "pages", s.pages, true);
      pages.setAttribute("data-done", String(s.pages_done));
      pages.setAttribute("data-total", String(s.pages_total));
      cell(tr, "eta", s.eta, false).className = "nowrap";
      cell(tr, "records", s.records, true);
      cell(tr, "rows", s.rows, true);
      cell(tr, "rejected", s.rejected, true);
      cell(tr, "requests", s.requests, true);
      body.appendChild(tr);
    });
    if (l.running) {
      following(l);
    }
    var next = document.getElementById("next-run");
    if (v.next) {
      field(next, "next-at", v.next.at);
      field(next, "next-in", v.next.in);
      field(next, "next-streams", v.next.streams);
    }
  }
})();
