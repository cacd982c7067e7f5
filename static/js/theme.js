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
