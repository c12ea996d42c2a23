// The Chat page: send with fetch, receive over server-sent events (EventSource), press buttons.
// No library: a few lines of the browser's own APIs. Fragments come rendered (and escaped) by the server.
(function () {
  "use strict";
  const box = document.getElementById("conversation");
  const form = document.getElementById("chat-form");
  if (!box || !form) return;
  const typing = document.getElementById("chat-typing");
  const error = document.getElementById("chat-error");
  const csrf = form.querySelector("input[name=csrf]").value;
  const maxBytes = Number(form.dataset.maxBytes);
  let partial = null;

  function scrollDown() { window.scrollTo(0, document.body.scrollHeight); }
  function showError(text) { error.textContent = text; error.hidden = !text; }

  function add(id, html) {
    const empty = box.querySelector(".empty");
    if (empty) empty.remove();
    if (document.getElementById("m-" + id)) return;  // already shown (the POST's answer and the stream both bring it)
    box.insertAdjacentHTML("beforeend", html);
    scrollDown();
  }

  function showPartial(text) {
    if (!text) {  // taken back (a tool turn's text before its calls): still writing
      if (partial) { partial.remove(); partial = null; }
      typing.hidden = false;
      return;
    }
    if (!partial) {
      partial = document.createElement("article");
      partial.className = "line from-character partial";
      partial.innerHTML = '<div class="who"></div><p class="text"></p>';
      partial.querySelector(".who").textContent = box.dataset.character;
      box.appendChild(partial);
    }
    partial.querySelector(".text").textContent = text;
    typing.hidden = true;
    scrollDown();
  }

  const events = new EventSource(box.dataset.events);
  events.addEventListener("open", () => { box.dataset.live = "yes"; });
  events.addEventListener("typing", () => { typing.hidden = false; });
  events.addEventListener("partial", (e) => showPartial(JSON.parse(e.data).text));
  events.addEventListener("message", (e) => {
    const said = JSON.parse(e.data);
    // A reply ends the writing, streamed or not: what it says replaces what was streamed.
    if (said.character) { if (partial) { partial.remove(); partial = null; } typing.hidden = true; }
    add(said.id, said.html);
  });

  async function post(url, body) {
    const response = await fetch(url, { method: "POST", body: body, headers: { "X-CSRF-Token": csrf } });
    const text = await response.text();
    if (!response.ok) { showError(text || response.statusText); return null; }
    showError("");
    return text;
  }

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const data = new FormData(form);
    const size = data.getAll("file").reduce((sum, f) => sum + (f.size || 0), 0);
    if (size > maxBytes) { showError("The files are larger than " + (maxBytes >> 20) + " MiB together; send smaller ones."); return; }
    const html = await post(form.action, data);
    if (html === null) return;
    form.reset();
    const id = /data-id="([^"]+)"/.exec(html);
    if (id) add(id[1], html);
  });
  form.querySelector("textarea").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); form.requestSubmit(); }
  });

  box.addEventListener("click", async (e) => {
    const button = e.target.closest("button[data-press]");
    if (!button) return;
    const data = new FormData();
    data.append("message", button.dataset.message);
    data.append("value", button.dataset.press);
    button.closest(".buttons").querySelectorAll("button").forEach((b) => { b.disabled = true; });
    const html = await post(box.dataset.press, data);
    if (html === null) { button.closest(".buttons").querySelectorAll("button").forEach((b) => { b.disabled = false; }); return; }
    const id = /data-id="([^"]+)"/.exec(html);
    if (id) add(id[1], html);
  });
  scrollDown();
})();
