// The question is on the page the moment Send is pressed, marked as being sent; it gives way to the
// server's copy when the send's answer lands. A refused send (its reason swapped in under the box,
// where the text still is) or one that never reached the server takes it away. The send's answer
// takes a noticeable moment on a busy server, 70-180 ms at p50-p95 beside 20 streaming users
// (bench/page). The home page is a conversation too (its draft): the same box, the same place.
(function () {
  "use strict";
  const form = document.getElementById("composer");
  const place = document.getElementById("messages");
  if (!form || !place) return;
  let pending = null;
  function drop() { if (pending) { pending.remove(); pending = null; } }
  form.addEventListener("htmx:beforeRequest", function (event) {
    if (event.detail.elt !== form) return;
    drop();
    const area = form.querySelector("textarea[name=message]");
    if (!area || !area.value.trim()) return;
    pending = document.createElement("article");
    pending.className = "msg user pending";
    pending.dataset.role = "pending-question";
    pending.setAttribute("aria-busy", "true");
    const body = document.createElement("div");
    body.className = "body";
    body.dir = "auto";
    body.textContent = area.value;  // text, never markup: the server's copy replaces it
    const note = document.createElement("p");
    note.className = "pending-note";
    note.textContent = gettext("Sending…");
    pending.append(body, note);
    place.appendChild(pending);
  });
  form.addEventListener("htmx:beforeSwap", function (event) { if (event.detail.elt === form) drop(); });
  form.addEventListener("htmx:afterRequest", function (event) { if (event.detail.elt === form) drop(); });
})();
