// The chat page's live part: one websocket per conversation, frames applied in (run, seq) order.
// Text is only ever inserted as text (textContent, text nodes); HTML comes from the server's sanitised fragments
// (and a streaming answer's markdown draft, sanitised in the page by stream_markdown.js).
(function () {
  "use strict";
  const chat = document.getElementById("chat");
  if (!chat) return;
  // Words come from Django's JavaScript catalogue (/jsi18n/, loaded by base.html) in the page's language.
  const fmt = function (text, values) { return interpolate(text, values, true); };
  // Frame kinds and final statuses come from the server (chatapp/frames.py), never typed here.
  const protocol = JSON.parse(document.getElementById("frame-protocol").textContent);
  const K = protocol.kinds;
  const conversation = chat.dataset.conversation;
  const storageKey = "clearloop-seq-" + conversation;
  let lastSeq = {};
  try { lastSeq = JSON.parse(sessionStorage.getItem(storageKey) || "{}"); } catch (e) { lastSeq = {}; }
  // A run still streaming is rendered with its text up to frame data-seq (none: an empty box): its
  // frames are replayed from there, whatever an earlier view of this page had seen.
  document.querySelectorAll("[data-run]").forEach(function (el) {
    const stream = el.querySelector("[data-role=stream]");
    if (stream) lastSeq[el.dataset.run] = +(stream.dataset.seq || 0);
  });
  const FILE_WRITERS = ["write_file", "append_file"];
  function filesChanged() { if (window.htmx) htmx.trigger(document.body, "files-changed"); }
  let socket = null;
  let retry = 0;
  const timers = {};
  const finished = {};

  function saveSeq() { sessionStorage.setItem(storageKey, JSON.stringify(lastSeq)); }
  function runEl(run) { return document.getElementById("run-" + run); }
  function part(run, role) { const el = runEl(run); return el && el.querySelector("[data-role=" + role + "]"); }

  // The run's badge, live: the same words and colours as the server renders (never snake_case).
  const STATUS_WORDS = { queued: gettext("Queued"), running: gettext("Running"), awaiting_approval: gettext("Awaiting approval"),
    awaiting_sign_in: gettext("Awaiting sign-in"), succeeded: gettext("Succeeded"), failed: gettext("Failed"),
    cancelled: gettext("Cancelled"), denied: gettext("Denied") };
  function setBadge(run, status) {
    const badge = part(run, "status");
    if (!badge) return;
    badge.textContent = STATUS_WORDS[status] || status;
    badge.className = "status badge status-" + status;
  }

  // A round or text of a run means it runs: its "running" status frame may have come before the
  // page held the run (the send's response, rendered while queued, lands after it).
  function markRunning(run) {
    const badge = part(run, "status");
    if (badge && badge.classList.contains("status-queued")) setBadge(run, "running");
  }

  function setWaiting(run, text) {
    const el = part(run, "waiting");
    if (el) el.textContent = text;
  }

  // The latest progress a running tool reported, per run ("42 %, indexing"); shown with the timer.
  const progressText = {};
  function startTimer(run, label) {
    stopTimer(run);
    const started = Date.now();
    const tick = function () {
      const seconds = Math.round((Date.now() - started) / 1000);
      const done = progressText[run];
      setWaiting(run, done ? fmt(gettext("%(label)s: %(done)s… (%(seconds)s s)"), { label: label, done: done, seconds: seconds })
        : fmt(gettext("%(label)s for %(seconds)s s…"), { label: label, seconds: seconds }));
    };
    tick();
    timers[run] = { interval: setInterval(tick, 1000), tick: tick };
  }
  function stopTimer(run) {
    if (timers[run]) { clearInterval(timers[run].interval); delete timers[run]; }
    delete progressText[run];
  }

  function describeProgress(data) {
    let text;
    if (typeof data.total === "number" && data.total > 0) {
      text = Math.min(100, Math.round((100 * data.progress) / data.total)) + " %";
    } else {
      text = fmt(gettext("step %(n)s"), { n: data.progress });
    }
    if (data.message) text += ", " + String(data.message).replace(/[.…\s]+$/, "");
    return text;
  }

  // Calls that have an outcome, per run: a progress report that arrives after it is stale.
  const finishedCalls = {};
  function applyProgress(run, data) {
    if (finishedCalls[run] && finishedCalls[run][data.call_id]) return;
    const text = describeProgress(data);
    if (!timers[run]) startTimer(run, fmt(gettext("Tool %(name)s running"), { name: data.name }));
    progressText[run] = text;
    timers[run].tick();
    const el = runEl(run);
    const holder = el && el.querySelector('[data-call="' + CSS.escape(data.call_id) + '"] [data-role=call-progress]');
    if (holder) holder.textContent = text;
  }

  // One fragment request per run at a time. A run's frames each ask for a redraw (a round's end, a
  // call's status, the run's end): a 3-round run with 3 tool calls asked for 16 fragments within 50 ms,
  // which the server rendered one after another, so the finished answer (its Stop gone) appeared
  // ~0.5 s after its badge said "Succeeded". Asks made while a request is in flight share the next
  // one, which starts when that one is answered: each still gets a fragment rendered after it asked.
  // Each caller parses its own copy (they take different parts of it).
  const fragmentLoads = {};
  function fragmentText(run) {
    const load = fragmentLoads[run] || (fragmentLoads[run] = { inflight: null, next: null });
    if (!load.inflight) {
      load.inflight = fetch("/runs/" + run + "/fragment/", { headers: { "HX-Request": "true" }, credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
        .finally(function () { load.inflight = null; });
      return load.inflight;
    }
    if (!load.next) {
      load.next = load.inflight.catch(function () {}).then(function () { load.next = null; return fragmentText(run); });
    }
    return load.next;
  }
  function fetchFragment(run) {
    return fragmentText(run).then(function (html) {
      const t = document.createElement("template");
      t.innerHTML = html;
      return t.content;
    });
  }

  function replaceRun(run, attempt) {
    stopTimer(run);
    attempt = attempt || 0;
    fetchFragment(run).catch(function (error) {
      // A busy server (5xx) must not leave a finished answer unshown: try again a few times.
      if (attempt < 4) setTimeout(function () { replaceRun(run, attempt + 1); }, 500 * Math.pow(2, attempt));
      return Promise.reject(error);
    }).then(function (frag) {
      const fresh = frag.querySelector("#run-" + run);
      const old = runEl(run);
      if (!fresh) return;
      if (old) {
        const oldTrace = old.querySelector("[data-role=trace]");
        const freshTrace = fresh.querySelector("[data-role=trace]");
        if (oldTrace && freshTrace) { freshTrace.open = oldTrace.open; restoreOpen(freshTrace, openStates(oldTrace)); }
        old.replaceWith(fresh);
      } else { document.getElementById("messages").appendChild(fresh); }
      htmx.process(fresh);
      drawTimeline(fresh);
    }).catch(function () { /* retried above */ });
  }

  // What the person opened in a trace (the trace, rounds, calls' "show all") stays open when the
  // server re-renders it for a live update or when the run finishes. Only what the person toggled is
  // carried over; the rest keeps the server's default (a round with calls opens itself once its calls
  // exist). Details are matched by their key (round, call and pane: data-key), so a pane that appears
  // when a call finishes (its result, the text sent to the model) does not shift what was opened.
  function openStates(root) {
    const states = {};
    root.querySelectorAll("details[data-key]").forEach(function (d) {
      if (d.dataset.touched) states[d.dataset.key] = d.open;
    });
    return states;
  }
  function restoreOpen(root, states) {
    root.querySelectorAll("details[data-key]").forEach(function (d) {
      if (Object.prototype.hasOwnProperty.call(states, d.dataset.key)) { d.open = states[d.dataset.key]; d.dataset.touched = "1"; }
    });
  }
  document.addEventListener("click", function (event) {
    const summary = event.target.closest("[data-role=trace] summary");
    if (summary && summary.parentElement.tagName === "DETAILS") summary.parentElement.dataset.touched = "1";
  });
  function drawTimeline(root) {
    if (window.clearloopTimeline) window.clearloopTimeline.renderAll(root);
    if (window.clearloopRich) window.clearloopRich.enhance(root);
  }

  function refreshTrace(run) {
    fetchFragment(run).then(function (frag) {
      const fresh = frag.querySelector("#run-" + run + " [data-role=trace]");
      const old = part(run, "trace");
      if (!fresh || !old) return;
      fresh.open = old.open;
      restoreOpen(fresh, openStates(old));
      old.replaceWith(fresh);
      drawTimeline(fresh);
    });
  }

  // One part of a run re-rendered by the server from its rows: a server's link to open (links),
  // the approval card with its timer and Stop (approval-card).
  function refreshPart(run, role) {
    fetchFragment(run).then(function (frag) {
      const fresh = frag.querySelector("#run-" + run + " [data-role=" + role + "]");
      const old = part(run, role);
      if (!fresh || !old) return;
      old.replaceWith(fresh);
      htmx.process(fresh);
      tickApprovalTimers();
    });
  }
  function refreshLinks(run) { refreshPart(run, "links"); }

  // "waiting for an admin · 1 min 12 s": counted from when the call started waiting.
  function tickApprovalTimers() {
    document.querySelectorAll("[data-role=approval-timer][data-since]").forEach(function (el) {
      const seconds = Math.max(0, Math.round((Date.now() - Date.parse(el.dataset.since)) / 1000));
      el.textContent = seconds >= 60 ? fmt(gettext("%(min)s min %(s)s s"), { min: Math.floor(seconds / 60), s: seconds % 60 })
        : fmt(gettext("%(s)s s"), { s: seconds });
    });
  }
  tickApprovalTimers();
  setInterval(tickApprovalTimers, 1000);

  const LINK_WAIT = gettext("waiting for you to open or decline the link below");
  function applyLink(run, data) {
    if (data.state === "pending") {
      if (!timers[run]) startTimer(run, fmt(gettext("Tool %(name)s running"), { name: data.tool }));
      progressText[run] = LINK_WAIT;
      timers[run].tick();
    } else if (progressText[run] === LINK_WAIT) {
      delete progressText[run];
    }
    refreshLinks(run);
  }

  function ensureRun(run) {
    if (runEl(run)) return true;
    replaceRun(run);  // a run started elsewhere (another tab): fetch its shell
    return false;
  }

  function applyToolCall(run, data) {
    const label = fmt(gettext("Tool %(name)s running"), { name: data.name });
    if (["succeeded", "failed", "unknown", "denied", "invalid"].indexOf(data.status) >= 0) {
      (finishedCalls[run] = finishedCalls[run] || {})[data.call_id] = true;
    }
    if (data.status === "running") startTimer(run, label);
    else if (data.status === "awaiting_approval") {
      stopTimer(run); setWaiting(run, fmt(gettext("Waiting for approval of %(name)s…"), { name: data.name }));
      refreshPart(run, "approval-card");
    }
    else { stopTimer(run); setWaiting(run, gettext("Thinking…")); }
    refreshTrace(run);
  }

  // A streaming answer grows in one text node: `textContent +=` built a new node from the whole text at
  // every frame, and Chromium shaped all of it again (a 40 KB answer: 3-8 ms of layout per frame,
  // against 1-1.7 ms appending; docs/performance.md, session 26).
  function appendText(el, text) {
    const last = el.lastChild;
    if (last && last.nodeType === Node.TEXT_NODE) last.appendData(text);
    else el.appendChild(document.createTextNode(text));
  }

  function apply(frame) {
    const run = frame.run;
    if (!run || !frame.seq) return;
    if (frame.seq <= (lastSeq[run] || 0)) return;  // replay overlap or duplicate
    lastSeq[run] = frame.seq;
    saveSeq();
    if (frame.type === K.GAP) return;  // a number a dead worker never wrote: nothing to show
    const data = frame.data || {};
    if (frame.type === K.DELTA) {
      if (!ensureRun(run)) return;
      markRunning(run);
      const stream = part(run, "stream");
      // The text as it came, in the stream box; drawn as markdown beside it (static/js/stream_markdown.js).
      if (stream && data.text) { appendText(stream, data.text); window.clearloopStream.changed(stream); setWaiting(run, ""); }
      if (data.tool_calls && data.tool_calls.length) setWaiting(run, gettext("Preparing tool calls…"));
    } else if (frame.type === K.ROUND_STARTED) {
      ensureRun(run);
      markRunning(run);
      stopTimer(run);
      setWaiting(run, data.kind === "continuation" ? gettext("Continuing the answer…") : gettext("Thinking…"));
    } else if (frame.type === K.TOOL_CALL) {
      applyToolCall(run, data);
      // A file the agent wrote shows up in the files panel while the run goes on.
      if (data.status === "succeeded" && FILE_WRITERS.indexOf(data.name) >= 0) filesChanged();
    } else if (frame.type === K.TOOL_PROGRESS) {
      applyProgress(run, data);
    } else if (frame.type === K.LINK) {
      applyLink(run, data);
    } else if (frame.type === K.APPROVAL_REQUESTED) {
      setWaiting(run, gettext("Waiting for approval…"));
      setBadge(run, "awaiting_approval");
      refreshPart(run, "approval-card");
    } else if (frame.type === K.APPROVAL_DECIDED) {
      setWaiting(run, fmt(data.decision === "approved" ? gettext("Approved by %(who)s. Continuing…") : gettext("Denied by %(who)s. Continuing…"), { who: data.by }));
      setBadge(run, data.decision === "approved" ? "running" : "denied");
      refreshPart(run, "approval-card");
      refreshTrace(run);
    } else if (frame.type === K.ROUND_FINISHED || frame.type === K.CONTEXT_COMPRESSED) {
      refreshTrace(run);
    } else if (frame.type === K.RUN_FINISHED || frame.type === K.RUN_FAILED) {
      finished[run] = true;  // its final status frame follows: one refresh is enough
      replaceRun(run);
      filesChanged();
    } else if (frame.type === K.STATUS) {
      setBadge(run, data.status);
      // A final status, or a sign-in wait (its card comes with the fragment), redraws the run.
      if ((protocol.terminal.indexOf(data.status) >= 0 && !finished[run]) || data.status === "awaiting_sign_in") replaceRun(run);
    }
  }

  // Frames of a run are applied strictly in sequence, and only once the run is on the page. A gap (a
  // live frame lost on the way) holds the later frames back and asks the server to replay from the
  // last one applied. Frames of a run the page does not show yet (its first frames can beat the send's
  // response, or it started in another tab) wait for its shell: applied to nothing, their text would be
  // lost from the live answer.
  const held = {};
  const resyncAt = {};

  function receive(frame) {
    const run = frame.run;
    if (!run || !frame.seq) { return; }
    if (frame.seq <= (lastSeq[run] || 0)) return;
    // A draft's page (the home page) that has sent nothing: the run was started from another tab, which
    // took this draft. This page stays a fresh start (its first message starts a conversation of its own).
    if (!runEl(run) && chat.hasAttribute("data-draft") && !document.querySelector("#messages > article")) return;
    (held[run] = held[run] || {})[frame.seq] = frame;
    if (!runEl(run)) { fetchShell(run); return; }
    drain(run);
  }

  function drain(run) {
    const queue = held[run];
    if (!queue) return;
    let next;
    while ((next = queue[(lastSeq[run] || 0) + 1])) {
      delete queue[next.seq];
      apply(next);
    }
    Object.keys(queue).forEach(function (seq) { if (+seq <= (lastSeq[run] || 0)) delete queue[seq]; });
    if (!Object.keys(queue).length) { delete held[run]; return; }
    if (!resyncAt[run] || Date.now() - resyncAt[run] > 1000) {
      resyncAt[run] = Date.now();
      const resume = {}; resume[run] = lastSeq[run] || 0;
      socket.send(JSON.stringify({ resume: resume, since_run: run }));
    }
  }

  // A running run's shell (its text box empty: every frame held for it is applied to it).
  const fetchingShell = {};
  function fetchShell(run) {
    if (fetchingShell[run]) return;
    fetchingShell[run] = true;
    fetchFragment(run).then(function (frag) {
      const fresh = frag.querySelector("#run-" + run);
      if (!fresh || runEl(run)) return;  // the send's response brought it meanwhile
      document.getElementById("messages").appendChild(fresh);
      htmx.process(fresh);
      drawTimeline(fresh);
    }).catch(function () { /* the run's next frame asks again */ }).then(function () {
      delete fetchingShell[run];
      if (runEl(run)) drain(run);
    });
  }

  // The send's response (or Regenerate's) appends the exchange; if the run's shell was fetched
  // first, the live one (with what it has applied) takes the response's place, after the question.
  function settleRuns() {
    const seen = {};
    document.querySelectorAll("#messages [data-run]").forEach(function (el) {
      if (seen[el.id]) el.replaceWith(seen[el.id]);
      else seen[el.id] = el;
    });
    Object.keys(held).forEach(function (run) { if (runEl(run)) drain(run); });
  }
  document.body.addEventListener("htmx:afterSwap", function (event) {
    if (event.detail.target && event.detail.target.id === "messages") settleRuns();
  });

  // The live connection's state, always visible: "Live", "Reconnecting in 4 s…", "Offline".
  const wsState = document.getElementById("ws-state");
  function showState(state, text) {
    if (!wsState) return;
    wsState.dataset.state = state;
    wsState.textContent = text;
  }
  window.addEventListener("offline", function () { showState("offline", gettext("Offline: no network")); });
  window.addEventListener("online", function () {
    if (socket && socket.readyState === WebSocket.OPEN) { showState("live", gettext("Live")); return; }
    showState("reconnecting", gettext("Reconnecting…"));
    if (!socket || socket.readyState > 1) connect();
  });

  function connect() {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    socket = new WebSocket(scheme + location.host + chat.dataset.wsPath);
    socket.addEventListener("open", function () {
      retry = 0;
      showState("live", gettext("Live"));
      // Finished runs are rendered in full by the server: only unfinished ones (and any this page has
      // followed live) are resumed, so opening a long conversation does not replay its whole history.
      const active = Array.prototype.filter.call(document.querySelectorAll("[data-run]"), function (el) {
        return protocol.terminal.indexOf(el.dataset.status) < 0 || lastSeq[+el.dataset.run];
      }).map(function (el) { return +el.dataset.run; });
      const resume = {};
      active.forEach(function (r) { resume[r] = lastSeq[r] || 0; });
      socket.send(JSON.stringify({ resume: resume, since_run: active.length ? Math.min.apply(null, active) : null }));
    });
    socket.addEventListener("message", function (event) {
      let frame; try { frame = JSON.parse(event.data); } catch (e) { return; }
      receive(frame);
    });
    socket.addEventListener("close", function (event) {
      if (event.code === 4403) { showState("offline", gettext("Offline: not allowed to follow this conversation")); return; }
      // 4429: this user has too many live sockets (other tabs); try again slowly.
      if (event.code === 4429) {
        showState("offline", gettext("Offline: too many open tabs; retrying in 30 s"));
        setTimeout(connect, 30000);
        return;
      }
      if (!navigator.onLine) { showState("offline", gettext("Offline: no network")); return; }  // "online" reconnects
      retry = Math.min(retry + 1, 6);
      const delay = 250 * Math.pow(2, retry - 1);
      showState(retry >= 6 ? "offline" : "reconnecting",
        fmt(retry >= 6 ? gettext("Offline: the server does not answer; retrying in %(s)s s…") : gettext("Reconnecting in %(s)s s…"),
          { s: Math.ceil(delay / 1000) }));
      setTimeout(connect, delay);
    });
  }

  const composer = document.getElementById("composer");
  if (composer) {
    // Delegated: an expanded MCP prompt replaces the textarea element.
    composer.addEventListener("keydown", function (event) {
      if (event.target.id === "message" && event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        composer.requestSubmit();
      }
    });
    // A refusal with its reason (409/422/429) is swapped into #send-error by htmx (base.html's
    // responseHandling); anything else that goes wrong still gets words here. The text stays.
    composer.addEventListener("htmx:sendError", function () {
      const err = document.getElementById("send-error");
      if (err) err.textContent = gettext("The server could not be reached; your message was not sent and is still in the box. Check your connection and send again.");
    });
    composer.addEventListener("htmx:responseError", function (event) {
      const status = event.detail.xhr.status;
      if ([409, 422, 429].indexOf(status) >= 0) return;
      const err = document.getElementById("send-error");
      if (err) err.textContent = fmt(gettext("The server could not take the message (HTTP %(status)s); it is still in the box. Try again in a moment."), { status: status });
    });
    document.addEventListener("htmx:afterRequest", function (event) {
      // A refusal (also of Regenerate) is only useful if it is seen: bring it into view.
      if ([409, 422, 429].indexOf(event.detail.xhr.status) < 0) return;
      const err = document.getElementById("send-error");
      if (err && err.textContent.trim()) err.scrollIntoView({ block: "nearest" });
    });
    composer.addEventListener("htmx:afterRequest", function (event) {
      if (event.detail.successful && event.detail.elt === composer) {
        const box = document.getElementById("message"); if (box) box.value = "";
        const pending = document.getElementById("pending-attachments"); if (pending) pending.textContent = "";
        const err = document.getElementById("send-error"); if (err) err.textContent = "";
        // Sent: the page's conversation is started, its next message a follow-up (views/chat.py send).
        const draft = composer.querySelector("input[name=draft]"); if (draft) draft.remove();
      }
    });
  }
  // An empty conversation (the home page) offers the seed scenarios in demo mode: a click puts the
  // prompt in the box, ready to send or edit.
  document.addEventListener("click", function (event) {
    const example = event.target.closest("button.example");
    const box = document.getElementById("message");
    if (!example || !box) return;
    box.value = example.dataset.prompt;
    box.focus();
  });
  // Opening a server's link is the user's consent: tell the waiting call, and let the browser open it
  // in a new tab (rel=noopener noreferrer; clearloop never fetches the URL itself).
  document.addEventListener("click", function (event) {
    const open = event.target.closest("a[data-link-accept]");
    if (!open) return;
    const headers = JSON.parse(document.body.getAttribute("hx-headers") || "{}");
    fetch(open.dataset.linkAccept, { method: "POST", headers: headers, credentials: "same-origin", keepalive: true });
    open.removeAttribute("data-link-accept");
  });
  document.addEventListener("click", function (event) {
    const button = event.target.closest("button.copy");
    if (!button) return;
    const target = document.querySelector(button.dataset.copy);
    if (!target || !navigator.clipboard) return;
    // A field (the share link) copies its value; anything else its text.
    const text = target.tagName === "INPUT" ? target.value : target.innerText;
    navigator.clipboard.writeText(text).then(function () {
      const label = button.textContent;
      button.textContent = gettext("Copied");
      setTimeout(function () { button.textContent = label; }, 1500);
    });
  });
  // An address naming an exchange the page did not bring (it opens with the latest ones): ask for
  // the page from that exchange on.
  const named = /^#run-(\d+)$/.exec(location.hash);
  if (named && !document.getElementById("run-" + named[1]) && document.getElementById("earlier") && !/[?&]since=/.test(location.search)) {
    location.replace(location.pathname + "?since=" + named[1] + location.hash);
    return;
  }
  // Earlier exchanges brought in as the person scrolls up: their waterfalls and code blocks.
  document.body.addEventListener("htmx:load", function (event) {
    const el = event.detail && event.detail.elt;
    if (el && el.matches && el.matches("#messages > article.assistant")) drawTimeline(el);
  });
  // They come in above what is on screen, which stays where it was: the browser's scroll anchoring
  // does that, except at the very top of the page, which is where a person scrolling up arrives.
  let kept = null;
  document.body.addEventListener("htmx:beforeSwap", function (event) {
    const next = event.detail.elt && event.detail.elt.id === "earlier" && event.detail.elt.nextElementSibling;
    kept = next ? { el: next, top: next.getBoundingClientRect().top } : null;
  });
  document.body.addEventListener("htmx:afterSwap", function () {
    if (kept && kept.el.isConnected) window.scrollBy(0, kept.el.getBoundingClientRect().top - kept.top);
    kept = null;
  });
  // A conversation opens at its latest exchange, beside the message box, as a chat does: the page
  // scrolls as a whole, and a long conversation opened at its first question with the box thousands of
  // pixels below. An address naming a part (#run-12) keeps it; Reload and Back keep the browser's place.
  const navigation = performance.getEntriesByType("navigation")[0];
  if (!location.hash && (!navigation || navigation.type === "navigate") && document.querySelector("#messages > article")) {
    window.scrollTo(0, document.documentElement.scrollHeight);
  }
  connect();
})();

// Uploads: the Attach button, files dropped on the message box, files pasted into it. Each batch is
// sent at once (XHR, for its progress events); the stored files become chips whose hidden inputs
// attach them to the next message. The server checks everything again and says why it refuses.
(function () {
  "use strict";
  const composer = document.getElementById("composer");
  if (!composer || !composer.dataset.uploadUrl) return;
  const input = document.getElementById("file-input");
  const pending = document.getElementById("pending-attachments");
  const status = document.getElementById("upload-status");
  const bar = status.querySelector("progress");
  const message = status.querySelector("[data-role=upload-message]");
  const fmt = function (text, values) { return interpolate(text, values, true); };

  function say(text, isError) {
    message.textContent = text;
    status.classList.toggle("error", !!isError);
    status.setAttribute("role", isError ? "alert" : "status");
  }

  function chip(file) {
    const li = document.createElement("li");
    li.className = "file-chip";
    li.dataset.upload = file.id;
    const name = document.createElement("span");
    name.textContent = file.renamed ? fmt(gettext("%(name)s (renamed)"), { name: file.name }) : file.name;
    const hidden = document.createElement("input");
    hidden.type = "hidden"; hidden.name = "attachment"; hidden.value = String(file.id);
    const remove = document.createElement("button");
    remove.type = "button"; remove.className = "linklike"; remove.textContent = "×";
    remove.setAttribute("aria-label", fmt(gettext("Do not attach %(name)s (it stays in the workspace)"), { name: file.name }));
    remove.addEventListener("click", function () { li.remove(); });
    li.append(name, hidden, remove);
    pending.appendChild(li);
  }

  function upload(files) {
    if (!files || !files.length) return;
    const form = new FormData();
    Array.prototype.forEach.call(files, function (f) { form.append("file", f); });
    const headers = JSON.parse(document.body.getAttribute("hx-headers") || "{}");
    const xhr = new XMLHttpRequest();
    xhr.open("POST", composer.dataset.uploadUrl);
    Object.keys(headers).forEach(function (k) { xhr.setRequestHeader(k, headers[k]); });
    bar.hidden = false; bar.value = 0;
    say(fmt(ngettext("Uploading %(n)s file…", "Uploading %(n)s files…", files.length), { n: files.length }));
    xhr.upload.addEventListener("progress", function (e) {
      if (e.lengthComputable) bar.value = Math.round((100 * e.loaded) / e.total);
    });
    xhr.addEventListener("load", function () {
      bar.hidden = true;
      let body = {};
      try { body = JSON.parse(xhr.responseText); } catch (e) { body = {}; }
      if (xhr.status >= 200 && xhr.status < 300) {
        body.files.forEach(chip);
        say(fmt(ngettext("%(n)s file uploaded; it is attached to your next message.", "%(n)s files uploaded; they are attached to your next message.", body.files.length), { n: body.files.length }));
        if (body.warnings && body.warnings.length) say(body.warnings.join(" "), true);
        if (window.htmx) htmx.trigger(document.body, "files-changed");
      } else {
        say(body.error || fmt(gettext("The upload failed (HTTP %(status)s)."), { status: xhr.status }), true);
      }
    });
    xhr.addEventListener("error", function () { bar.hidden = true; say(gettext("The upload failed: the connection was lost."), true); });
    xhr.send(form);
  }

  input.addEventListener("change", function () { upload(input.files); input.value = ""; });
  composer.addEventListener("dragover", function (e) {
    if (e.dataTransfer && Array.prototype.indexOf.call(e.dataTransfer.types, "Files") >= 0) {
      e.preventDefault(); composer.classList.add("dropping");
    }
  });
  composer.addEventListener("dragleave", function () { composer.classList.remove("dropping"); });
  composer.addEventListener("drop", function (e) {
    composer.classList.remove("dropping");
    if (e.dataTransfer && e.dataTransfer.files.length) { e.preventDefault(); upload(e.dataTransfer.files); }
  });
  composer.addEventListener("paste", function (e) {
    const files = e.clipboardData && e.clipboardData.files;
    if (files && files.length) { e.preventDefault(); upload(files); }
  });
})();
