// Approvers see the tool calls that wait for them, on every page (chat, audit, admin), live: the
// count is asked for every 5 s (one small query), the badge opens a list of the waiting calls (each
// linked to its review page), and a new call is announced by a browser notification when the person
// allowed them (asked only on a click: browsers refuse permission prompts without a gesture).
(function () {
  "use strict";
  const gettext = window.gettext || function (s) { return s; };
  const ngettext = window.ngettext || function (one, many, n) { return n === 1 ? one : many; };
  const interpolate = window.interpolate || function (fmt, values) {
    return fmt.replace(/%\((\w+)\)s/g, function (_, key) { return String(values[key]); });
  };
  const root = document.querySelector("[data-role=approvals]");
  if (!root) return;
  const badge = root.querySelector("[data-role=approvals-badge]");
  const count = badge.querySelector("[data-role=approvals-count]");
  const panel = root.querySelector("[data-role=approvals-panel]");
  const list = panel.querySelector("[data-role=approvals-list]");
  const notifyButton = panel.querySelector("[data-role=approvals-notify]");
  const notifyState = panel.querySelector("[data-role=approvals-notify-state]");
  let last = parseInt(count.textContent, 10) || 0;
  let lastLatest = null;

  // --- the list ---------------------------------------------------------------------------------
  function loadList() {
    return fetch(root.dataset.listUrl, { credentials: "same-origin", headers: { Accept: "text/html" } })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null) return;
        // Server-rendered and escaped by Django's templates; parsed inert, then moved in.
        const t = document.createElement("template");
        t.innerHTML = html;
        list.replaceChildren(t.content);
      })
      .catch(function () { /* offline: the next poll tries again */ });
  }
  function setOpen(open) {
    panel.hidden = !open;
    badge.setAttribute("aria-expanded", String(open));
    if (open) { showNotifyChoice(); loadList(); }
  }
  badge.addEventListener("click", function () { setOpen(panel.hidden); });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && !panel.hidden) { setOpen(false); badge.focus(); }
  });
  document.addEventListener("click", function (event) {
    if (!panel.hidden && !root.contains(event.target)) setOpen(false);
  });

  // --- notifications ----------------------------------------------------------------------------
  function showNotifyChoice() {
    const supported = "Notification" in window;
    const permission = supported ? Notification.permission : "unsupported";
    notifyButton.hidden = permission !== "default";
    notifyState.textContent = permission === "granted" ? gettext("Browser notifications are on.")
      : permission === "denied" ? gettext("Browser notifications are blocked for this site.") : "";
  }
  notifyButton.addEventListener("click", function () {
    Notification.requestPermission().then(showNotifyChoice);
  });
  function notify(n, latest) {
    if (!("Notification" in window) || Notification.permission !== "granted") return;
    const title = interpolate(ngettext("clearloop: %(n)s tool call waiting for approval",
      "clearloop: %(n)s tool calls waiting for approval", n), { n: n }, true);
    const body = latest ? interpolate(gettext("%(tool)s in %(user)s's chat"), { tool: latest.name, user: latest.user }, true) : "";
    const note = new Notification(title, { body: body, tag: "clearloop-approvals" });
    note.addEventListener("click", function () {
      window.focus();
      if (latest) location.href = latest.url;
      note.close();
    });
  }

  // --- the count, live --------------------------------------------------------------------------
  function show(body) {
    const n = body.pending;
    const latestId = body.latest ? body.latest.id : null;
    count.textContent = String(n);
    badge.hidden = n === 0;
    if (n === 0 && !panel.hidden) setOpen(false);
    else if (!panel.hidden && (n !== last || latestId !== lastLatest)) loadList();
    if (n > last || (latestId !== null && lastLatest !== null && latestId !== lastLatest && n >= last)) notify(n, body.latest);
    last = n;
    lastLatest = latestId;
  }
  function poll() {
    fetch(root.dataset.url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (body) { if (body && typeof body.pending === "number") show(body); })
      .catch(function () { /* offline: the next poll tries again */ });
  }
  setInterval(poll, 5000);
  document.addEventListener("visibilitychange", function () { if (!document.hidden) poll(); });
})();
