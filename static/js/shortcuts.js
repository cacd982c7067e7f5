// Keyboard shortcuts of the chat page (listed in the "Keyboard shortcuts" help beside the conversation
// list, docs/interface.md): Alt+Shift+N new conversation, Alt+Shift+M or "/" the message box,
// Alt+Shift+S stop the answer being written, "?" this help. Letters are matched by physical key
// (event.code), so they work in any keyboard layout and input language; "/" and "?" only when the
// person is not typing in a field.
(function () {
  "use strict";
  const help = document.getElementById("shortcuts");
  function typing(target) {
    return target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }
  function newConversation() {
    const form = document.querySelector("[data-role=new-conversation]");
    if (form) form.requestSubmit();
  }
  function focusMessage() {
    const box = document.getElementById("message");
    if (box) { box.focus(); box.scrollIntoView({ block: "nearest" }); }
  }
  function stop() {
    // The Stop of the newest run that is still going (the approval card's Stop does the same).
    const buttons = document.querySelectorAll("[data-run] .actions button.stop");
    const last = buttons[buttons.length - 1];
    if (!last) return;
    // Posted here rather than clicked: a Stop that has just arrived may not be wired by htmx yet.
    const headers = JSON.parse(document.body.getAttribute("hx-headers") || "{}");
    fetch(last.getAttribute("hx-post"), { method: "POST", headers: headers, credentials: "same-origin" });
  }
  document.addEventListener("keydown", function (event) {
    if (event.isComposing || event.ctrlKey || event.metaKey) return;
    if (event.altKey && event.shiftKey) {
      const action = { KeyN: newConversation, KeyM: focusMessage, KeyS: stop }[event.code];
      if (action) { event.preventDefault(); action(); }
      return;
    }
    if (event.altKey || typing(event.target)) return;
    if (event.key === "/") { event.preventDefault(); focusMessage(); }
    else if (event.key === "?" && help) { event.preventDefault(); help.open = !help.open; if (help.open) help.querySelector("summary").focus(); }
    else if (event.key === "Escape" && help && help.open) { help.open = false; }
  });
})();
