// podium serve: live parts of the pages, from the dashboard's own JSON endpoints only.
"use strict";

const POLL_MS = Number(document.body.dataset.pollMs || 1000);

function duration(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  const pad = (n) => String(n).padStart(2, "0");
  if (s >= 3600) return `${Math.floor(s / 3600)}h ${pad(Math.floor((s % 3600) / 60))}m`;
  if (s >= 60) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  return `${s}s`;
}

function tickElapsed() {
  for (const cell of document.querySelectorAll("[data-since]")) {
    const since = Number(cell.dataset.since);
    if (since > 0) cell.textContent = duration(Date.now() / 1000 - since);
  }
}

async function getJSON(url) {
  const answer = await fetch(url, { credentials: "same-origin", cache: "no-store" });
  if (!answer.ok) throw new Error(`${url}: ${answer.status}`);
  return answer.json();
}

async function pollLog(pre) {
  try {
    const log = await getJSON(pre.dataset.logUrl);
    const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    if (log.exists && pre.textContent !== log.text) {
      pre.textContent = log.text;
      if (atEnd) pre.scrollTop = pre.scrollHeight;
    }
    const name = pre.id.replace(/^log-/, "");
    const size = document.getElementById(`size-${name}`);
    if (size) size.textContent = `${log.size} bytes${log.cut ? ", last 64 KiB" : ""}`;
    if (!log.live) pre.dataset.live = "0";
  } catch (error) {
    pre.dataset.error = String(error);
  }
}

function cell(row, text, href) {
  const td = row.insertCell();
  if (href) {
    const a = document.createElement("a");
    a.href = href;
    a.textContent = text;
    td.appendChild(a);
  } else {
    td.textContent = text;
  }
  return td;
}

async function pollLive(table) {
  try {
    const data = await getJSON(table.dataset.liveApi);
    const group = table.dataset.group;
    const runs = data.runs.filter((r) => !group || r.group === group);
    const body = table.tBodies[0];
    body.replaceChildren();
    for (const r of runs) {
      const row = body.insertRow();
      cell(row, r.group);
      cell(row, r.competition_id, r.url);
      cell(row, String(r.seed));
      cell(row, r.started);
      cell(row, r.elapsed).dataset.since = String(r.started_epoch);
      cell(row, r.node || "this host");
      cell(row, r.owner_alive ? "running" : "stopped (left behind)");
    }
    if (!runs.length) {
      const row = body.insertRow();
      row.className = "none";
      const td = cell(row, "no run in progress");
      td.colSpan = 7;
    }
  } catch (error) {
    table.dataset.error = String(error);
  }
}

const SVG = "http://www.w3.org/2000/svg";

function caption(c) {
  const top = Number(c.top).toPrecision(3);
  return `${c.title} (0 to ${top} ${c.unit} over ${duration(c.seconds)}, ${c.n} samples)`;
}

function chartFigure(c) {
  const figure = document.createElement("figure");
  figure.className = "chart";
  figure.dataset.title = c.title;
  figure.appendChild(document.createElement("figcaption"));
  const svg = document.createElementNS(SVG, "svg");
  for (const [k, v] of [["viewBox", "0 0 600 120"], ["width", "600"], ["height", "120"], ["role", "img"]]) {
    svg.setAttribute(k, v);
  }
  svg.setAttribute("aria-label", c.title);
  const line = document.createElementNS(SVG, "polyline");
  for (const [k, v] of [["fill", "none"], ["stroke", "#2a6fb0"], ["stroke-width", "1.5"]]) line.setAttribute(k, v);
  svg.appendChild(line);
  figure.appendChild(svg);
  return figure;
}

async function pollCharts(box) {
  try {
    const data = await getJSON(box.dataset.resourcesUrl);
    for (const c of data.charts) {
      let figure = [...box.querySelectorAll("figure.chart")].find((f) => f.dataset.title === c.title);
      if (!figure) figure = box.appendChild(chartFigure(c));
      figure.querySelector("figcaption").textContent = caption(c);
      figure.querySelector("polyline").setAttribute("points", c.points);
    }
    const note = document.getElementById("samples-note");
    if (note && data.charts.length) note.remove();
    if (!data.live) box.dataset.live = "0";
  } catch (error) {
    box.dataset.error = String(error);
  }
}

function poll() {
  for (const box of document.querySelectorAll("#charts[data-live='1']")) pollCharts(box);
  for (const pre of document.querySelectorAll("pre[data-log-url][data-live='1']")) pollLog(pre);
  for (const table of document.querySelectorAll("table[data-live-api]")) pollLive(table);
}

document.addEventListener("DOMContentLoaded", () => {
  tickElapsed();
  setInterval(tickElapsed, 1000);
  setInterval(poll, POLL_MS);
});
