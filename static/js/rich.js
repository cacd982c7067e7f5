// Rich Markdown in answers, drawn in the browser from the server's sanitised HTML: a language label
// and a Copy button on code blocks, KaTeX for span.math/div.math, Mermaid for code.language-mermaid.
// Both libraries are vendored under static/vendor (pinned; no CDN) and loaded only when a page has
// something for them. Each takes the element's *text* (already escaped by the server), never HTML.
(function () {
  "use strict";
  const me = document.currentScript;
  const nonce = me.nonce || me.getAttribute("nonce") || "";
  const loaded = {};

  function load(src, css) {
    if (loaded[src]) return loaded[src];
    if (css) {
      const link = document.createElement("link");
      link.rel = "stylesheet"; link.href = css;
      document.head.appendChild(link);
    }
    loaded[src] = new Promise(function (resolve, reject) {
      const script = document.createElement("script");
      script.src = src; script.nonce = nonce;
      script.onload = resolve; script.onerror = reject;
      document.head.appendChild(script);
    });
    return loaded[src];
  }

  function codeBlocks(root) {
    root.querySelectorAll(".markdown pre").forEach(function (pre) {
      if (pre.dataset.enhanced || pre.parentElement.closest("code")) return;
      const code = pre.querySelector(":scope > code");
      const match = code && /(?:^|\s)language-([\w+#.-]+)/.exec(code.className);
      if (match && match[1] === "mermaid") return;
      pre.dataset.enhanced = "1";
      const bar = document.createElement("div");
      bar.className = "code-toolbar";
      const label = document.createElement("span");
      label.className = "code-lang";
      label.textContent = match ? match[1] : "text";
      const copy = document.createElement("button");
      copy.type = "button"; copy.className = "code-copy linklike"; copy.textContent = gettext("Copy");
      copy.setAttribute("aria-label", interpolate(gettext("Copy the %(language)s code"), { language: label.textContent }, true));
      copy.addEventListener("click", function () {
        if (!navigator.clipboard) return;
        navigator.clipboard.writeText((code || pre).innerText).then(function () {
          copy.textContent = gettext("Copied");
          setTimeout(function () { copy.textContent = gettext("Copy"); }, 1500);
        });
      });
      bar.append(label, copy);
      pre.before(bar);
    });
  }

  function math(root) {
    const nodes = root.querySelectorAll(".markdown .math.inline:not([data-drawn]), .markdown .math.block:not([data-drawn])");
    if (!nodes.length) return;
    load(me.dataset.katex, me.dataset.katexCss).then(function () {
      nodes.forEach(function (el) {
        const source = el.textContent.trim();
        el.dataset.drawn = "1";
        el.setAttribute("aria-label", source);
        // trust:false (the default) keeps \\href, \\url and HTML extensions off.
        window.katex.render(source, el, { displayMode: el.classList.contains("block"), throwOnError: false, trust: false });
      });
    });
  }

  let diagrams = 0;
  function mermaidBlocks(root) {
    const nodes = root.querySelectorAll(".markdown pre > code.language-mermaid");
    if (!nodes.length) return;
    load(me.dataset.mermaid).then(function () {
      // "strict": no click handlers, no HTML labels, its output sanitised by its own DOMPurify.
      // htmlLabels off: labels are SVG text, so no foreignObject (HTML) is ever needed.
      window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict", theme: "default",  // on a light card in both page themes (CSS)
        htmlLabels: false, flowchart: { htmlLabels: false } });
      nodes.forEach(function (code) {
        const pre = code.parentElement;
        if (pre.dataset.drawn) return;
        pre.dataset.drawn = "1";
        const source = code.textContent;
        window.mermaid.render("mermaid-" + (++diagrams), source).then(function (out) {
          // Parsed apart, then adopted: the diagram's own <style> gets this page's nonce (CSP).
          // Parsed as HTML (inert: nothing in a parsed document runs), which reads SVG leniently; as XML
          // a label's stray markup made the whole diagram a parser-error page.
          const svg = new DOMParser().parseFromString(out.svg, "text/html").querySelector("svg");
          if (!svg) throw new Error(gettext("the diagram came out empty"));
          svg.querySelectorAll("script, foreignObject, iframe, object, embed").forEach(function (n) { n.remove(); });
          // Defence in depth behind Mermaid's strict level: no handler attributes, and no links out of
          // the diagram (a node cannot show where it leads; links belong in the answer's text).
          svg.querySelectorAll("*").forEach(function (el) {
            Array.prototype.slice.call(el.attributes).forEach(function (a) {
              if (/^on/i.test(a.name) || (/href$/i.test(a.name) && a.value.trim().charAt(0) !== "#")) el.removeAttribute(a.name);
            });
          });
          svg.querySelectorAll("style").forEach(function (s) { s.setAttribute("nonce", nonce); });
          const figure = document.createElement("figure");
          figure.className = "mermaid-diagram";
          figure.setAttribute("role", "img");
          figure.setAttribute("aria-label", "Diagram: " + source.slice(0, 200));
          figure.appendChild(document.importNode(svg, true));
          pre.replaceWith(figure);
        }).catch(function (error) {
          const note = document.createElement("p");
          note.className = "muted"; note.textContent = gettext("The diagram could not be drawn:") + " " + (error && error.message ? error.message : error);
          pre.after(note);
        });
      });
    });
  }

  function enhance(root) {
    root = root || document;
    codeBlocks(root);
    math(root);
    mermaidBlocks(root);
  }
  // codeBlocks alone for a streaming answer's draft (stream_markdown.js): a half-written diagram or
  // formula is not drawn.
  window.clearloopRich = { enhance: enhance, codeBlocks: codeBlocks };
  enhance(document);
})();
