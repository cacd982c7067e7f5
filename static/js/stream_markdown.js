// A streaming answer drawn as markdown while it arrives, as every chat app does: before, it stayed plain
// text until the run's end, when the server's HTML replaced it (and the page jumped).
//
// The stream box ([data-role=stream]) still holds the text exactly as it came (chat.js appends each
// frame's text to it; replays and resumes are checked against it); once drawn it is hidden and a draft
// box beside it ([data-role=draft]) shows that text as markdown. The draft is a draft: the server's
// sanitised HTML (chatapp/markdown.py) replaces the whole run at its end, with highlighting, math,
// diagrams and footnotes. It uses the same parser family (markdown-it, the JavaScript original of
// markdown-it-py) with the same core options: raw HTML off, no linkify, tables and strikethrough, a
// table column's alignment as an align-* class (the CSP refuses style attributes). Its output is
// sanitised by DOMPurify with the server's allowlist before it touches the page: images, handlers and
// other URL schemes never get through.
//
// Cost: a draw parses only the text after the answer's settled blocks. A top-level block followed by
// another can no longer change (markdown's blocks close when the next one opens; reference definitions
// aside, which the server's HTML puts right at the end), so it is drawn once and kept: a draw costs the
// last block, not the answer. Draws are batched to one per animation frame, and spaced out when one
// takes long (a huge last block), so a long answer never takes the page's main thread.
(function () {
  "use strict";
  const me = document.currentScript;
  const nonce = me.nonce || me.getAttribute("nonce") || "";
  const TAGS = ["p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "em", "del", "s", "code", "pre",
    "blockquote", "ul", "ol", "li", "table", "thead", "tbody", "tr", "th", "td", "a"];
  // Only classes the draft's own renderer writes: a fence's language and a column's alignment.
  const CLASSES = { code: /^language-[\w+#.-]+$/, th: /^align-(left|center|right)$/, td: /^align-(left|center|right)$/ };
  const SLOW_DRAW_MS = 8;  // a draw longer than this waits a few times its cost before the next
  let lib = null;
  let loading = null;

  function script(src) {
    return new Promise(function (resolve, reject) {
      const el = document.createElement("script");
      el.src = src; el.nonce = nonce;
      el.onload = resolve; el.onerror = reject;
      document.head.appendChild(el);
    });
  }

  function alignedByClass(state) {
    state.tokens.forEach(function (token) {
      if (token.type !== "th_open" && token.type !== "td_open") return;
      const found = /^text-align:(left|center|right)$/.exec(token.attrGet("style") || "");
      token.attrs = (token.attrs || []).filter(function (a) { return a[0] !== "style"; });
      if (found) token.attrSet("class", "align-" + found[1]);
    });
  }

  function keepOwnClasses(node) {
    if (!node.hasAttribute || !node.hasAttribute("class")) return;
    const allowed = CLASSES[node.nodeName.toLowerCase()];
    const kept = allowed ? node.getAttribute("class").split(/\s+/).filter(function (c) { return allowed.test(c); }) : [];
    if (kept.length) node.setAttribute("class", kept.join(" "));
    else node.removeAttribute("class");
  }

  function build() {
    const md = window.markdownit("commonmark", { html: false, linkify: false, typographer: false });
    md.enable(["table", "strikethrough"]);
    md.core.ruler.push("aligned_by_class", alignedByClass);
    const purify = window.DOMPurify(window);  // an instance of its own: its hooks are ours alone
    purify.addHook("afterSanitizeAttributes", function (node) {
      keepOwnClasses(node);
      if (node.nodeName === "A" && node.hasAttribute("href")) node.setAttribute("rel", "noopener noreferrer nofollow");
    });
    const config = {
      ALLOWED_TAGS: TAGS, ALLOWED_ATTR: ["href", "title", "class", "start"], RETURN_DOM_FRAGMENT: true,
      // http(s), mailto and relative addresses, as the server's nh3 url_schemes.
      ALLOWED_URI_REGEXP: /^(?:(?:https?|mailto):|[^a-z]|[a-z+.-]+(?:[^a-z+.\-:]|$))/i,
    };
    return {
      md: md,
      html: function (tokens, env) { return purify.sanitize(md.renderer.render(tokens, md.options, env), config); },
    };
  }

  // The libraries are fetched once, when the page is idle or the first text arrives, whichever is
  // first; until then the stream box shows its plain text, and it is drawn when they come. If they
  // cannot be fetched the page keeps the plain text (asked again at every frame, a server that is
  // down would get a request per frame); the next page load tries again.
  function ensure() {
    if (!loading) {
      loading = Promise.all([script(me.dataset.markdownIt), script(me.dataset.purify)]).then(function () {
        lib = build();
        document.querySelectorAll("[data-role=stream]").forEach(function (el) { if (el.textContent) changed(el); });
      }).catch(function () { /* plain text */ });
    }
    return loading;
  }

  const drafts = new WeakMap();
  function draftOf(stream) {
    let d = drafts.get(stream);
    if (!d) {
      d = { stream: stream, box: null, settledAt: 0, settledNodes: 0, pending: false, cost: 0 };
      drafts.set(stream, d);
    }
    return d;
  }

  // The stream box's text changed (chat.js appended a frame's text): draw it at the next frame.
  function changed(stream) {
    if (!lib) { ensure(); return; }
    const d = draftOf(stream);
    if (d.pending) return;
    d.pending = true;
    const run = function () { d.pending = false; if (d.stream.isConnected) draw(d); };
    if (d.cost > SLOW_DRAW_MS) setTimeout(run, 4 * d.cost);
    else requestAnimationFrame(run);
  }

  function offsetOfLine(text, line) {
    let at = 0;
    for (let i = 0; i < line; i++) {
      at = text.indexOf("\n", at) + 1;
      if (at === 0) return text.length;
    }
    return at;
  }

  // The index of the token opening the last top-level block, and how many top-level blocks there are.
  function lastBlock(tokens) {
    let last = -1, count = 0;
    tokens.forEach(function (t, i) {
      if (t.level === 0 && t.map && t.nesting >= 0) { last = i; count++; }
    });
    return { index: last, count: count };
  }

  function replaceTail(d, fragment) {
    const box = d.box;
    while (box.childNodes.length > d.settledNodes) box.lastChild.remove();
    box.appendChild(fragment);
  }

  // A code block's language label and Copy button, as the final answer has them (rich.js), so the
  // run's end does not shift the answer by a bar per block.
  function toolbars(box) {
    if (window.clearloopRich) window.clearloopRich.codeBlocks(box);
  }

  function draw(d) {
    const started = performance.now();
    if (!d.box) {
      d.box = document.createElement("div");
      d.box.className = "body markdown";
      d.box.dataset.role = "draft";
      d.box.dir = "auto";
      d.stream.after(d.box);
      d.stream.hidden = true;
    }
    // markdown-it reads \r\n and \r as \n and NUL as U+FFFD: the offsets below count in that text.
    let text = d.stream.textContent;
    if (text.indexOf("\r") >= 0 || text.indexOf("\0") >= 0) text = text.replace(/\r\n?/g, "\n").replace(/\0/g, "\uFFFD");
    const source = text.slice(d.settledAt);
    const env = {};
    let tokens = lib.md.parse(source, env);
    const last = lastBlock(tokens);
    if (last.count >= 2) {
      replaceTail(d, lib.html(tokens.slice(0, last.index), env));
      toolbars(d.box);  // before the count: a code block's bar belongs to the settled part
      d.settledNodes = d.box.childNodes.length;
      d.settledAt += offsetOfLine(source, tokens[last.index].map[0]);
      tokens = tokens.slice(last.index);
    }
    replaceTail(d, lib.html(tokens, env));
    toolbars(d.box);
    d.cost = performance.now() - started;
  }

  window.clearloopStream = { changed: changed, ensure: ensure };
  if (document.querySelector("[data-role=stream], #composer")) {
    const idle = window.requestIdleCallback || function (f) { setTimeout(f, 200); };
    idle(function () { ensure(); }, { timeout: 2000 });
  }
})();
