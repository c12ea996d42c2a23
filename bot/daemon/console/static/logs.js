// The Logs page: the daemon's log lines, live, over server-sent events (an EventSource), for
// the character and level chosen. A browser that fell behind is told how many lines it lost.
(function () {
  "use strict";

  const SHOWN = 1000; // lines kept on the page; the oldest go first
  let source = null;

  function item(className, text) {
    const li = document.createElement("li");
    li.className = className;
    li.textContent = text;
    return li;
  }

  function append(log, li) {
    const follow = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
    log.appendChild(li);
    while (log.children.length > SHOWN) log.removeChild(log.firstChild);
    if (follow) log.scrollTop = log.scrollHeight;
  }

  function line(data) {
    const li = document.createElement("li");
    li.className = "line level-" + data.level.toLowerCase();
    li.dataset.agent = data.agent;
    li.dataset.level = data.level;
    for (const [name, text] of [["time", data.time], ["level", data.level], ["agent", data.agent],
      ["logger", data.logger], ["message", data.message]]) {
      const span = document.createElement("span");
      span.className = name;
      span.textContent = text;
      li.appendChild(span);
    }
    return li;
  }

  function connect() {
    const form = document.getElementById("log-filter");
    const log = document.getElementById("log");
    const state = document.getElementById("log-state");
    const query = new URLSearchParams(new FormData(form));
    if (source) source.close();
    log.replaceChildren();
    history.replaceState(null, "", "/logs?" + query.toString());
    source = new EventSource(log.dataset.stream + "?" + query.toString());
    source.onopen = () => { state.textContent = "Live"; };
    source.onerror = () => { state.textContent = "Reconnecting…"; };
    source.onmessage = (event) => append(log, line(JSON.parse(event.data)));
    source.addEventListener("dropped", (event) => {
      const n = JSON.parse(event.data).dropped;
      append(log, item("dropped", n + (n === 1 ? " line" : " lines") + " dropped here: this page fell behind the log"));
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    const form = document.getElementById("log-filter");
    form.addEventListener("change", connect);
    form.addEventListener("submit", (event) => { event.preventDefault(); connect(); });
    connect();
  });
})();
