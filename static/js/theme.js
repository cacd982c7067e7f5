(function () {
  "use strict";
  const root = document.documentElement;
  const saved = localStorage.getItem("clearloop-theme");
  if (saved) root.dataset.theme = saved;
  const toggle = document.getElementById("theme-toggle");
  if (!toggle) return;
  toggle.addEventListener("click", function () {
    const dark = root.dataset.theme === "dark" ||
      (root.dataset.theme === "auto" && window.matchMedia("(prefers-color-scheme: dark)").matches);
    root.dataset.theme = dark ? "light" : "dark";
    localStorage.setItem("clearloop-theme", root.dataset.theme);
  });
})();

// Phones: the conversation list is a drawer (the ☰ button opens it; Escape, a tap outside or
// choosing a conversation closes it).
(function () {
  "use strict";
  const toggle = document.querySelector("[data-role=drawer-toggle]");
  const drawer = document.getElementById("sidebar");
  if (!toggle || !drawer) return;
  function set(open) {
    drawer.classList.toggle("open", open);
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
    if (open) { const first = drawer.querySelector("button, input, a"); if (first) first.focus(); } else { toggle.focus(); }
  }
  toggle.addEventListener("click", function () { set(!drawer.classList.contains("open")); });
  document.addEventListener("keydown", function (e) { if (e.key === "Escape" && drawer.classList.contains("open")) set(false); });
  document.addEventListener("click", function (e) {
    if (drawer.classList.contains("open") && !drawer.contains(e.target) && !toggle.contains(e.target)) set(false);
  });
})();

// Phones: the top bar's links (Menu) and the conversation's model picker, Delete and panels (⚙)
// fold into menus; a button opens its menu (aria-controls), Escape or a tap outside closes it.
// On a desktop the buttons are hidden and the menus' contents are shown in place (app.css).
(function () {
  "use strict";
  document.querySelectorAll("[data-role=menu-toggle], [data-role=options-toggle]").forEach(function (button) {
    const menu = document.getElementById(button.getAttribute("aria-controls"));
    if (!menu) return;
    function set(open, refocus) {
      menu.classList.toggle("open", open);
      button.setAttribute("aria-expanded", open ? "true" : "false");
      if (open) { const first = menu.querySelector("select, button, input, a, summary"); if (first) first.focus(); }
      else if (refocus) button.focus();
    }
    button.addEventListener("click", function () { set(!menu.classList.contains("open"), false); });
    document.addEventListener("keydown", function (e) {
      if (e.key === "Escape" && menu.classList.contains("open")) set(false, true);
    });
    document.addEventListener("click", function (e) {
      if (menu.classList.contains("open") && !menu.contains(e.target) && !button.contains(e.target)) set(false, false);
    });
  });
})();
