// Approvers see how many tool calls wait for a decision, on every page (chat, audit, admin), live:
// the count is asked for every 5 s (a cheap COUNT), and a rise is announced by a browser
// notification when the person allowed them.
(function () {
  "use strict";
  const badge = document.querySelector("[data-role=approvals-badge]");
  if (!badge) return;
  const count = badge.querySelector("[data-role=approvals-count]");
  let last = parseInt(count.textContent, 10) || 0;

  function notify(n) {
    if (!("Notification" in window) || Notification.permission !== "granted") return;
    const text = ngettext("clearloop: %(n)s tool call waiting for approval", "clearloop: %(n)s tool calls waiting for approval", n);
    new Notification(interpolate(text, { n: n }, true), { tag: "clearloop-approvals" });
  }
  function show(n) {
    count.textContent = String(n);
    badge.hidden = n === 0;
    if (n > last) notify(n);
    last = n;
  }
  // Asking for permission needs a gesture: the first click on the badge asks (once).
  badge.addEventListener("click", function () {
    if ("Notification" in window && Notification.permission === "default") Notification.requestPermission();
  });
  function poll() {
    fetch(badge.dataset.url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (body) { if (body && typeof body.pending === "number") show(body.pending); })
      .catch(function () { /* offline: the next poll tries again */ });
  }
  setInterval(poll, 5000);
  document.addEventListener("visibilitychange", function () { if (!document.hidden) poll(); });
})();
