// The question is on the page the moment Send is pressed, marked as being sent, in both message boxes:
// the conversation's (it gives way to the server's copy when the send's answer lands) and the home
// page's (it stays while the browser goes to the new conversation). A refused send (its reason swapped
// in under the box, where the text still is) or one that never reached the server takes it away.
// The send's answer takes a noticeable moment on a busy server, 70-180 ms at p50-p95 beside 20
// streaming users, and a first message ~150 ms before the new page shows it (bench/page).
(function () {
  "use strict";
  const boxes = [
    { form: document.getElementById("composer"), place: function () { return document.getElementById("messages"); } },
    { form: document.getElementById("start-composer"), place: function (form) { return form.parentNode; }, before: true },
  ];
  boxes.forEach(function (box) {
    const form = box.form;
    if (!form) return;
    let pending = null;
    function drop() { if (pending) { pending.remove(); pending = null; } }
    form.addEventListener("htmx:beforeRequest", function (event) {
      if (event.detail.elt !== form) return;
      drop();
      const area = form.querySelector("textarea[name=message]");
      const where = box.place(form);
      if (!area || !area.value.trim() || !where) return;
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
      if (box.before) where.insertBefore(pending, form); else where.appendChild(pending);
    });
    form.addEventListener("htmx:beforeSwap", function (event) { if (event.detail.elt === form) drop(); });
    form.addEventListener("htmx:afterRequest", function (event) {
      if (event.detail.elt !== form) return;
      // Accepted on the home page: the browser is going to the conversation, which shows it.
      const going = event.detail.successful && event.detail.xhr && event.detail.xhr.getResponseHeader("HX-Redirect");
      if (!going) drop();
    });
  });
})();
