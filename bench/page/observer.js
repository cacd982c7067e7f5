// Injected into the chat page by bench/page/run.py. Marks, in epoch milliseconds (the host's clock, as
// the fake upstream's stamps), when the page first shows what a send is waiting for. A mutation's
// callback runs before the browser paints it; the "painted" marks are taken in the first animation
// frame after it (what the user can see).
(function () {
  const epoch = function () { return performance.timeOrigin + performance.now(); };
  const marks = (window.__benchMarks = {});
  let current = null;  // {rid, before: Set of run ids on the page, tokens}

  function paintedLater(key) {
    requestAnimationFrame(function () { marks[current.rid][key] = epoch(); });
  }
  function mark(key) {
    const m = marks[current.rid];
    if (m[key]) return;
    m[key] = epoch();
    paintedLater(key + "_painted");
  }
  function look() {
    if (!current) return;
    // Anywhere on the page but the message box (a textarea's typed value is not in textContent).
    const main = document.querySelector("main");
    if (!marks[current.rid].echo && main && main.textContent.indexOf(current.rid) >= 0) mark("echo");
    document.querySelectorAll("#messages [data-run]").forEach(function (el) {
      if (current.before.has(el.dataset.run)) return;
      const stream = el.querySelector("[data-role=stream]");
      const answer = el.querySelector("[data-role=answer]");
      const text = (stream && stream.textContent) || "";
      if (text.trim() || (answer && answer.textContent.trim())) mark("first");
      if (text.indexOf(current.last) >= 0 || (answer && answer.textContent.indexOf(current.last) >= 0)) mark("full");
    });
  }
  // Where the time goes: the send's request (htmx's events, the resource timing of its XHR) and the
  // first text frame's arrival on the websocket (a listener added before chat.js's).
  ["htmx:beforeRequest", "htmx:afterRequest", "htmx:afterSwap"].forEach(function (name) {
    document.addEventListener(name, function (event) {
      const elt = event.detail && event.detail.elt;
      if (!current || !elt || (elt.id !== "composer" && elt.id !== "messages")) return;
      const m = marks[current.rid];
      const key = name.slice(5);
      if (!m[key]) m[key] = epoch();
      if (name === "htmx:afterRequest") {
        const entries = performance.getEntriesByType("resource").filter(function (e) { return /\/send\/$/.test(e.name); });
        const e = entries[entries.length - 1];
        if (e) {
          m.xhr_start = performance.timeOrigin + e.startTime;
          m.xhr_request = performance.timeOrigin + e.requestStart;
          m.xhr_response = performance.timeOrigin + e.responseStart;
          m.xhr_end = performance.timeOrigin + e.responseEnd;
        }
      }
    });
  });
  const Native = window.WebSocket;
  window.WebSocket = function (url, protocols) {
    const socket = protocols === undefined ? new Native(url) : new Native(url, protocols);
    if (current && !marks[current.rid].ws_new) marks[current.rid].ws_new = epoch();
    socket.addEventListener("open", function () {
      if (current && !marks[current.rid].ws_open) marks[current.rid].ws_open = epoch();
    });
    socket.addEventListener("message", function (event) {
      if (!current || marks[current.rid].frame) return;
      const frame = JSON.parse(event.data);
      if (frame.type === "delta" && frame.data && frame.data.text && !current.before.has(String(frame.run))) marks[current.rid].frame = epoch();
    });
    return socket;
  };
  window.WebSocket.prototype = Native.prototype;
  Object.assign(window.WebSocket, { CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3 });
  performance.setResourceTimingBufferSize(10000);

  new MutationObserver(look).observe(document, { subtree: true, childList: true, characterData: true });

  // Every request the page made since the click of a send (what else it asked the server for).
  window.__benchRequests = function (rid) {
    const since = marks[rid].click - performance.timeOrigin;
    return performance.getEntriesByType("resource").filter(function (e) { return e.startTime >= since; })
      .map(function (e) { return [e.name.replace(location.origin, ""), Math.round(e.startTime - since), Math.round(e.duration)]; });
  };
  window.__benchSend = function (rid, text, last) {
    const form = document.getElementById("composer");
    const before = new Set();
    document.querySelectorAll("#messages [data-run]").forEach(function (el) { before.add(el.dataset.run); });
    current = { rid: rid, before: before, last: last };
    marks[rid] = {};
    form.querySelector("textarea[name=message]").value = text;
    marks[rid].click = epoch();
    form.requestSubmit();
  };
})();
