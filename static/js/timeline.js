// The run's waterfall: one row per round and per tool call on a shared time axis (data from
// chatapp/views/timeline.py, in a JSON island beside the trace). Bars are positioned with the CSSOM
// (the CSP allows no inline style attributes); every duration is also in text for screen readers.
(function () {
  "use strict";
  const fmt = function (text, values) { return interpolate(text, values, true); };
  // Numbers in the page's language (document lang, set from Django's active language).
  const lang = document.documentElement.lang || undefined;
  const num0 = new Intl.NumberFormat(lang, { maximumFractionDigits: 0 });
  const num1 = new Intl.NumberFormat(lang, { minimumFractionDigits: 1, maximumFractionDigits: 1 });
  function ms(value) {
    if (value == null) return "–";
    return value >= 1000 ? (value >= 10000 ? num0 : num1).format(value / 1000) + " s" : num0.format(Math.round(value)) + " ms";
  }
  function pct(value, total) { return Math.max(0, Math.min(100, (100 * value) / total)) + "%"; }
  function bar(track, cls, start, end, total) {
    const el = document.createElement("span");
    el.className = "tl-bar " + cls;
    el.style.left = pct(start, total);
    el.style.width = "max(2px, " + pct(end - start, total) + ")";
    track.appendChild(el);
    return el;
  }
  const STATUS = { proposed: gettext("proposed"), invalid: gettext("invalid"), awaiting_approval: gettext("awaiting approval"),
    approved: gettext("approved"), denied: gettext("denied"), running: gettext("running"), succeeded: gettext("succeeded"),
    failed: gettext("failed"), unknown: gettext("unknown") };
  function took_(row) { return ms(row.took != null ? row.took : row.end - row.start); }
  function describe(row) {
    const took = took_(row);
    if (row.kind === "round") {
      let text = fmt(gettext("%(label)s: from %(start)s, %(took)s"), { label: row.label, start: ms(row.start), took: took }) +
        (row.ttft != null ? fmt(gettext(", first token after %(ttft)s"), { ttft: ms(row.ttft) }) : "") +
        (row.finish ? fmt(gettext(", finished with %(finish)s"), { finish: row.finish }) : "");
      if (row.tokens) text += fmt(gettext(", %(prompt)s prompt / %(completion)s completion tokens"),
        { prompt: row.tokens[0] == null ? "–" : num0.format(row.tokens[0]), completion: row.tokens[1] == null ? "–" : num0.format(row.tokens[1]) });
      (row.retries || []).forEach(function (r, i) {
        text += fmt(gettext(", attempt %(n)s failed (%(error)s), sent again after %(wait)s"), { n: i + 1, error: r.error, wait: ms(r.wait) });
      });
      return text;
    }
    let text = fmt(gettext("%(label)s: from %(start)s, %(took)s"), { label: row.label, start: ms(row.start), took: took }) +
      ", " + (STATUS[row.status || "proposed"] || row.status);
    if (row.wait) text += fmt(gettext(", waited %(wait)s for approval"), { wait: ms(row.wait[1] - row.wait[0]) });
    if (row.decision) {
      text += fmt(gettext(", %(decision)s by %(by)s"), { decision: STATUS[row.decision.decision] || row.decision.decision, by: row.decision.by }) +
        (row.decision.reason ? ": \u201c" + row.decision.reason + "\u201d" : "");
    }
    if (row.attempts > 1) text += fmt(gettext(", %(n)s attempts"), { n: row.attempts });
    return text;
  }
  // A round: each failed attempt (red) and the wait before the next (hatched), then the attempt that
  // answered: waiting for the first token (grey), streaming (blue).
  function roundBars(track, row, total) {
    let from = row.start;
    (row.retries || []).forEach(function (r) {
      bar(track, "tl-retry", from, r.at, total);
      bar(track, "tl-backoff", r.at, Math.min(r.at + r.wait, row.end), total);
      from = Math.min(r.at + r.wait, row.end);
    });
    const firstToken = row.ttft != null ? Math.max(from, Math.min(row.start + row.ttft, row.end)) : from;
    bar(track, "tl-wait-token", from, firstToken, total);
    bar(track, "tl-stream", firstToken, row.end, total);
  }
  // A call: the approval wait (amber), each try that was retried (red), the last try (green/red).
  function callBars(track, row, total) {
    if (row.wait) bar(track, "tl-approval", row.wait[0], row.wait[1], total);
    const tries = (row.tries || []).filter(function (t) { return t <= row.end; });
    let runStart = row.wait ? Math.max(row.start, row.wait[1]) : row.start;
    tries.slice(0, -1).forEach(function (t, i) { bar(track, "tl-retry", t, tries[i + 1], total); });
    if (tries.length > 1) runStart = tries[tries.length - 1];
    bar(track, "tl-call", runStart, row.end, total);
  }
  function render(container, data) {
    const total = Math.max(data.total_ms || 1, 1);
    const list = document.createElement("ol");
    list.className = "tl-rows";
    const frag = document.createDocumentFragment();
    data.rows.forEach(function (row) {
      const li = document.createElement("li");
      li.className = "tl-row tl-" + row.kind + (row.status ? " status-" + row.status : "");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "tl-open";
      button.dataset.target = row.kind === "round" ? "round:" + row.round : "call:" + row.call_id;
      const label = document.createElement("span");
      label.className = "tl-label";
      label.textContent = row.label;
      const track = document.createElement("span");
      track.className = "tl-track";
      track.setAttribute("aria-hidden", "true");
      if (row.kind === "round") roundBars(track, row, total);
      else callBars(track, row, total);
      const text = describe(row);
      const hidden = document.createElement("span");
      hidden.className = "visually-hidden";
      hidden.textContent = text;
      const duration = document.createElement("span");
      duration.className = "tl-took";
      duration.textContent = took_(row);
      button.title = text;
      button.append(label, track, duration, hidden);
      li.appendChild(button);
      frag.appendChild(li);
    });
    list.appendChild(frag);
    const axis = document.createElement("p");
    axis.className = "tl-axis muted";
    axis.textContent = "0 – " + ms(total) + " · " + gettext("rounds: waiting for the first token, then streaming; calls: approval wait, then running; red: a failed attempt that was retried");
    container.replaceChildren(list, axis);
  }
  function renderAll(root) {
    (root || document).querySelectorAll("[data-role=timeline]").forEach(function (el) {
      const island = document.getElementById(el.dataset.source);
      if (!island) return;
      try { render(el, JSON.parse(island.textContent)); } catch (e) { el.textContent = gettext("The timeline could not be drawn."); }
    });
  }
  // A row opens its detail in the trace below (the round, or the call with its Arguments and Result).
  document.addEventListener("click", function (event) {
    const button = event.target.closest("button.tl-open");
    if (!button) return;
    const article = button.closest("[data-run]");
    const parts = button.dataset.target.split(":");
    const target = parts[0] === "round"
      ? article.querySelector('li.round[data-round="' + CSS.escape(parts[1]) + '"]')
      : article.querySelector('.call[data-call="' + CSS.escape(parts.slice(1).join(":")) + '"]');
    if (!target) return;
    let node = target;
    while (node && node !== article) { if (node.tagName === "DETAILS") node.open = true; node = node.parentElement; }
    const inner = parts[0] === "round" && target.querySelector(":scope > details"); if (inner) inner.open = true;
    target.classList.add("tl-focus");
    setTimeout(function () { target.classList.remove("tl-focus"); }, 1500);
    target.scrollIntoView({ block: "nearest" });
  });
  window.clearloopTimeline = { render: render, renderAll: renderAll };
  renderAll(document);
})();
