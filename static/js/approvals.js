// Approvers see the tool calls that wait for them, on every page (chat, audit, admin), live: the
// server pushes the count and the newest waiting call over /ws/approvals/ whenever the queue changes
// (a call waits, is decided, or its run is stopped), the badge opens a list of the waiting calls (each
// linked to its review page, reloaded on every change while open), and a new call is announced by a
// browser notification when the person allowed them (asked only on a click: browsers refuse
// permission prompts without a gesture). While the socket is down the count is polled slowly
// (data-poll-seconds, 60 s); a refused socket (4403) stops reconnecting and leaves the poll.
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
      .then(function (r) {
        if (r.status === 403) { refused = true; stopPolling(); return null; }  // no longer an approver
        return r.ok ? r.json() : null;
      })
      .then(function (body) { if (body && typeof body.pending === "number") show(body); })
      .catch(function () { /* offline: the next poll tries again */ });
  }

  // --- the push feed, with the slow poll while it is down ---------------------------------------
  const pollMs = Math.max(5, parseInt(root.dataset.pollSeconds, 10) || 60) * 1000;
  let socket = null;
  let live = false;
  let retryMs = 1000;
  let poller = null;
  let refused = false;
  function startPolling() { if (poller === null && !refused) poller = setInterval(poll, pollMs); }
  function stopPolling() { if (poller !== null) { clearInterval(poller); poller = null; } }
  function setLive(on) {
    live = on;
    root.dataset.feed = on ? "live" : (refused ? "refused" : "polling");
    if (on) stopPolling(); else startPolling();
  }
  function connect() {
    if (!("WebSocket" in window) || refused) { setLive(false); return; }
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    try {
      socket = new WebSocket(scheme + location.host + root.dataset.wsPath);
    } catch (e) { setLive(false); return; }
    socket.addEventListener("message", function (event) {
      let body = null;
      try { body = JSON.parse(event.data); } catch (e) { return; }
      if (!live) { setLive(true); retryMs = 1000; }
      if (body && body.type === "approvals" && typeof body.pending === "number") show(body);
    });
    socket.addEventListener("close", function (event) {
      socket = null;
      if (event.code === 4403) refused = true;  // not (or no longer) an approver: no retries
      setLive(false);
      if (refused) { stopPolling(); return; }
      setTimeout(connect, retryMs);
      retryMs = Math.min(retryMs * 2, 30000);
    });
  }
  setLive(false);  // polls slowly until the feed says hello (its first message is the queue as it is)
  connect();
  document.addEventListener("visibilitychange", function () { if (!document.hidden && !live && !refused) poll(); });
})();
