// The language switch in the header (chat, audit and admin pages) applies on change: its form posts
// to /language/ (Django's set_language, plus the person's saved choice).
(function () {
  "use strict";
  const menu = document.querySelector("[data-role=language-menu]");
  if (menu) menu.addEventListener("change", function () { menu.form.submit(); });
})();
