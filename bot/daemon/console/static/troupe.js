// The Troupe page's plots of the last hour, drawn with uPlot from /parts/series (the daemon's
// metrics, a sample a minute, and the current minute so far). Refreshed every few seconds.
(function () {
  "use strict";

  const REFRESH_MS = 5000;
  const COLOURS = {
    replied: "#1a7f37", acted: "#0969da", ignored: "#8c959f", muted: "#b7bcc2", own: "#d0d7de",
    superseded: "#9a6700", duplicate: "#bf8700", send_failed: "#cf222e", model_unreachable: "#a40e26",
    timeout: "#e16f24", error: "#82071e", unparsed: "#8250df",
  };
  const SPARE = ["#0550ae", "#6639ba", "#953800", "#116329", "#4d2d00", "#57606a"];
  const charts = {};

  function colour(name, index) {
    return COLOURS[name] || SPARE[index % SPARE.length];
  }

  function seconds(value) {
    if (value === null || value === undefined) return "-";
    return value < 10 ? value.toFixed(2) + " s" : value.toFixed(1) + " s";
  }

  function clock(unix) {
    return new Date(unix * 1000).toTimeString().slice(0, 5);
  }

  function summary(totals) {
    const outcomes = Object.entries(totals.by_outcome).map(([name, n]) => n + " " + name.replace(/_/g, " "));
    const parts = [totals.messages + (totals.messages === 1 ? " message" : " messages") + " in the last hour: " + outcomes.join(", ")];
    if (totals.p50_s !== null) parts.push("reply latency p50 " + seconds(totals.p50_s) + ", p95 " + seconds(totals.p95_s));
    if (totals.model_per_message !== null) parts.push(totals.model_per_message.toFixed(1) + " model requests per message");
    return parts.join(" · ");
  }

  function draw(id, series, data, span) {
    const box = document.getElementById(id);
    const key = series.map((s) => s.label).join("|");
    const width = Math.max(240, box.clientWidth);
    const chart = charts[id];
    if (chart && chart.key === key) {
      chart.span = span;
      chart.plot.setData(data);
      if (chart.plot.width !== width) chart.plot.setSize({ width: width, height: 180 });
      return;
    }
    if (chart) chart.plot.destroy();
    const options = {
      width: width,
      height: 180,
      legend: { show: true, live: false },
      scales: { x: { time: true }, y: { range: (u, min, max) => [0, Math.max(max || 0, 1) * 1.1] } },
      axes: [{ space: 60, values: (u, splits) => splits.map(clock) }, { size: 44 }],
      series: [{}].concat(series),
    };
    const entry = { key: key, span: span };
    // The whole hour on the x axis, so that a quiet stretch shows as one.
    options.scales.x.range = () => entry.span;
    entry.plot = new uPlot(options, data, box);
    charts[id] = entry;
  }

  function line(label, stroke) {
    return { label: label, stroke: stroke, width: 2, points: { show: true, size: 7, fill: stroke }, spanGaps: false };
  }

  function render(body) {
    const section = document.getElementById("plots");
    const note = document.getElementById("plots-summary");
    const grid = section.querySelector(".plot-grid");
    const totals = body.totals;
    section.dataset.messages = String(totals.messages);
    if (totals.messages === 0) {
      note.textContent = "No messages in the last hour: nothing to plot yet.";
      note.classList.add("empty");
      grid.hidden = true;
      return;
    }
    note.textContent = summary(totals);
    note.classList.remove("empty");
    grid.hidden = false;
    const times = body.times;
    const end = times[times.length - 1];
    const span = [end - body.window_s, end];
    const names = Object.keys(body.outcomes);
    draw("plot-outcomes", names.map((name, i) => line(name.replace(/_/g, " "), colour(name, i))),
      [times].concat(names.map((name) => body.outcomes[name])), span);
    draw("plot-latency", [line("p50", "#0969da"), line("p95", "#cf222e")], [times, body.p50_s, body.p95_s], span);
    draw("plot-model", [line("requests per message", "#8250df")], [times, body.model_per_message], span);
    section.dataset.drawn = String(Date.now());
  }

  async function refresh() {
    try {
      const response = await fetch(document.getElementById("plots").dataset.series, {
        headers: { Accept: "application/json" },
        credentials: "same-origin",
      });
      if (response.ok) render(await response.json());
    } catch (error) {
      // The daemon is restarting or gone: the status above says so; try again at the next round.
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    refresh();
    setInterval(refresh, REFRESH_MS);
  });
})();
