// The inspector's page: the run list and one run, kept live by one EventSource. Everything shown is set as text
// (never as HTML), so nothing a run carries can become markup.
"use strict";

const base = document.body.dataset.base;
const state = { runs: new Map(), selected: 0, open: 0, rows: [], run: null, source: null, after: 0 };
const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const ms = (value) => (value === null || value === undefined ? "–" : `${value.toFixed(1)} ms`);
const clock = (epoch) => new Date(epoch * 1000).toLocaleTimeString([], { hour12: false });

function statusPill(run) {
  if (run.in_flight) return el("span", { class: "pill warn" }, "running");
  const status = run.status === null ? "no reply" : String(run.status);
  return el("span", { class: `pill ${run.status !== null && run.status < 400 ? "ok" : "bad"}` }, status);
}

function outcomePill(run) {
  if (!run.outcome) return "–";
  const bad = run.outcome === "error" || run.outcome === "rejected" || run.outcome === "client_gone";
  const text = run.error ? `${run.outcome}: ${run.error}` : run.outcome;
  return el("span", { class: `pill ${bad ? "bad" : run.outcome === "success" ? "ok" : "warn"}` }, text);
}

function lossPills(dropped) {
  const kinds = Object.entries(dropped || {});
  if (!kinds.length) return "–";
  return kinds.map(([kind, count]) => el("span", {
    class: `pill ${kind.includes("_as_") ? "approx" : "drop"}`,
    title: kind.includes("_as_") ? "said another way in the client's dialect" : "left out: the client's dialect has no place for it",
  }, `${kind.includes("_as_") ? "≈" : "−"} ${kind} ×${count}`));
}

function flags(run) {
  const found = [];
  if (run.resumed) found.push(el("span", { class: "pill warn" }, "resumed"));
  if (run.stopped) found.push(el("span", { class: "pill warn" }, "stopped"));
  if (run.reattached) found.push(el("span", { class: "pill warn" }, "reattached"));
  if (run.failovers) found.push(el("span", { class: "pill warn", title: run.failovers }, `moved to ${run.upstream}`));
  if (run.truncated) found.push(el("span", { class: "pill bad" }, "capture cut"));
  if (run.violations && run.violations.length) {
    found.push(el("span", { class: "pill bad", title: run.violations.map((v) => `${v.side}: ${v.rule}`).join("\n") },
      `${run.violations.length} rule${run.violations.length === 1 ? "" : "s"} broken`));
  }
  if (!run.captured) found.push(el("span", { class: "pill", title: "runs are captured while the page is open" }, "summary only"));
  return found.length ? found : "–";
}

// What the route's judge found (routes[].judge): each broken rule, the side and frame it is about. A rule about a
// frame the timeline shows is listed beside it there (`placed`); here are the others (the head, the stream's end).
const placed = (v, rows) => v.row !== null && v.row !== undefined && v.row < rows;

function brokenItem(v) {
  return el("li", {},
    el("span", { class: "pill bad" }, `${v.side} · ${v.dialect}`), " ", el("code", { class: "rule" }, v.rule),
    v.frame === null ? "" : ` (frame ${v.frame + 1})`, `: ${v.message}`);
}

function judged(run, rows) {
  if (!run.violations) return "–";
  if (!run.violations.length) return el("span", { class: "pill ok" }, "no rule broken");
  const beside = run.violations.filter((v) => placed(v, rows)).length;
  const rest = run.violations.filter((v) => !placed(v, rows));
  return [
    rest.length ? el("ul", { class: "violations" }, rest.map(brokenItem)) : null,
    beside ? el("p", { class: "muted" }, `${beside} broken rule${beside === 1 ? "" : "s"} shown beside ${beside === 1 ? "its frame" : "their frames"} in the timeline`) : null,
  ];
}

// Each broken rule beside the frame that broke it: in the upstream's frame cell, or in the client's (its row's write).
function markBroken(run, tbody) {
  for (const list of tbody.querySelectorAll("ul.broken")) list.remove();
  for (const row of tbody.rows) row.classList.remove("broke");
  for (const v of run.violations || []) {
    if (!placed(v, tbody.rows.length)) continue;
    const row = tbody.rows[v.row];
    const cell = row.cells[v.side === "upstream" ? 1 : 3];
    let list = cell.querySelector("ul.broken");
    if (!list) { list = el("ul", { class: "broken violations" }); cell.append(list); }
    list.append(brokenItem(v));
    row.classList.add("broke");
  }
}

// The run list

function matches(run, words) {
  const text = [run.route, run.client_dialect, run.upstream_dialect, run.status, run.outcome, run.error, run.key_id,
    run.path, run.conversation_id, run.request_id, run.upstream, run.failovers, run.in_flight ? "running" : "", run.resumed ? "resumed" : "",
    run.stopped ? "stopped" : "", Object.keys(run.dropped || {}).join(" "),
    (run.violations || []).map((v) => v.rule).join(" ")].join(" ").toLowerCase();
  return words.every((word) => text.includes(word));
}

function visibleRuns() {
  const words = $("filter").value.toLowerCase().split(/\s+/).filter(Boolean);
  return [...state.runs.values()].sort((a, b) => b.id - a.id).filter((run) => matches(run, words));
}

// A run's row, made anew; `renderList` copies it into the row already shown, so that row stays the same node.
function runRow(run) {
  return el("tr", {
    "data-id": run.id, tabindex: run.id === state.selected ? "0" : "-1", class: run.in_flight ? "running" : "",
    "aria-selected": run.id === state.selected ? "true" : "false",
  },
  el("td", { class: "num" }, clock(run.started)),
  el("td", {}, run.route),
  el("td", { class: "dialects" }, `${run.client_dialect} ← ${run.upstream_dialect}`),
  el("td", {}, run.key_id ? `key ${run.key_id}` : "anonymous"),
  el("td", {}, statusPill(run)),
  el("td", {}, outcomePill(run)),
  el("td", { class: "num" }, ms(run.ttfe_ms)),
  el("td", { class: "num" }, `${run.events_in} / ${run.events_out}`),
  el("td", {}, lossPills(run.dropped)),
  el("td", {}, flags(run)));
}

// Makes `node` what `want` is, changing only what differs: a node that stays is not replaced, so a click pressed on
// it before a refresh and released after still lands on it, and focus stays where it was.
function morph(node, want) {
  if (node.nodeType !== Node.ELEMENT_NODE) {
    if (node.nodeValue !== want.nodeValue) node.nodeValue = want.nodeValue;
    return;
  }
  for (const { name } of [...node.attributes]) if (!want.hasAttribute(name)) node.removeAttribute(name);
  for (const { name, value } of want.attributes) if (node.getAttribute(name) !== value) node.setAttribute(name, value);
  const have = [...node.childNodes];
  const wanted = [...want.childNodes];
  for (const [index, child] of wanted.entries()) {
    const old = have[index];
    if (old && old.nodeName === child.nodeName) morph(old, child);
    else if (old) old.replaceWith(child);
    else node.append(child);
  }
  for (const extra of have.slice(wanted.length)) extra.remove();
}

// What each row shows: a run's line is replaced, never changed, when the feed sends it anew, so a row whose line and
// selection are those it shows is left as it is.
const drawn = new WeakMap();

function inList() {
  return Boolean(document.activeElement && document.activeElement.closest("#runs"));
}

// Each run keeps its row while it is shown: the list is redrawn at every update of a running run, and a row made
// anew each time would lose a click pressed before an update and released after it.
function renderList() {
  const runs = visibleRuns();
  const body = $("runs").tBodies[0];
  if (!runs.some((run) => run.id === state.selected)) state.selected = runs.length ? runs[0].id : 0;
  const focused = inList();
  const shown = new Set(runs.map((run) => run.id));
  const rows = new Map([...body.rows].map((row) => [Number(row.dataset.id), row]));
  for (const [id, row] of rows) if (!shown.has(id)) row.remove();
  for (const [index, run] of runs.entries()) {
    const selected = run.id === state.selected;
    const row = rows.get(run.id) || runRow(run);
    const shows = drawn.get(row);
    if (shows && (shows.run !== run || shows.selected !== selected)) morph(row, runRow(run));
    drawn.set(row, { run, selected });
    if (body.rows[index] !== row) body.insertBefore(row, body.rows[index] || null);  // a new run, or a new order
  }
  $("empty").hidden = state.runs.size > 0;
  $("count").textContent = state.runs.size ? `${runs.length} of ${state.runs.size}` : "";
  if (focused && !inList()) focusSelected();  // its row was filtered out or forgotten
}

function focusSelected() {
  const row = $("runs").querySelector(`tr[data-id="${state.selected}"]`);
  if (row) { row.focus(); row.scrollIntoView({ block: "nearest" }); }
}

function move(step) {
  const runs = visibleRuns();
  if (!runs.length) return;
  const at = Math.max(0, runs.findIndex((run) => run.id === state.selected));
  state.selected = runs[Math.min(runs.length - 1, Math.max(0, at + step))].id;
  renderList();
  focusSelected();
}

// One run

function headers(values) {
  const names = Object.keys(values || {});
  if (!names.length) return null;
  return el("details", {}, el("summary", {}, `${names.length} headers`),
    el("pre", {}, names.map((name) => `${name}: ${values[name]}`).join("\n")));
}

function body(value) {
  return el("pre", {}, typeof value === "string" ? value : JSON.stringify(value, null, 2));
}

function renderRequest(target, request, response, dialect, side) {
  if (!request) {
    const none = { upstream: "The upstream was not called.", moved: "No upstream answered: each failed the run (above)." };
    target.replaceChildren(el("p", { class: "muted" }, none[side] || "Not captured."));
    return;
  }
  const where = side !== "client"
    ? `POST ${request.url}${request.path || ""}${request.variant ? ` (${request.variant})` : ""}`
    : `${request.method} ${request.path}`;
  const answer = response ? `answered ${response.status}${response.at_ms !== null && response.at_ms !== undefined ? ` at ${ms(response.at_ms)}` : ""}` : "";
  target.replaceChildren(
    el("p", { class: "meta" }, `${dialect} · ${where}`),
    answer ? el("p", { class: "meta" }, answer) : null,
    headers(request.headers),
    body(request.body));
}

// An upstream that failed the run before its reply (a route with fallbacks): who, why, and what it was asked.
function attemptItem(attempt) {
  const why = `${attempt.reason}${attempt.status !== null ? ` (HTTP ${attempt.status})` : ""} · ${attempt.error}`;
  return el("li", { class: "attempt" },
    el("p", { class: "meta" }, `${attempt.upstream} · ${attempt.dialect} · POST ${attempt.url}`),
    el("p", {}, el("span", { class: "why" }, why), ` · asked at ${ms(attempt.began_ms)}, failed ${ms(attempt.took_ms)} later`),
    attempt.request ? el("details", {}, el("summary", {}, "what it was asked"),
      headers(attempt.request.headers), body(attempt.request.body)) : null);
}

function renderAttempts(attempts) {
  $("attempts").hidden = !attempts || !attempts.length;
  $("attempt-list").replaceChildren(...(attempts || []).map(attemptItem));
}

function eventLine(event) {
  const fields = typeof event.fields === "object" && event.fields !== null
    ? Object.entries(event.fields).filter(([, v]) => v !== null && v !== "" && !(Array.isArray(v) && !v.length))
      .map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join(" ")
    : String(event.fields);
  return el("div", { class: "event" },
    el("span", { class: "kind" }, event.kind),
    el("span", { class: "fields" }, fields),
    event.dropped.map((loss) => el("span", {
      class: `pill ${loss.approximated ? "approx" : "drop"}`,
    }, loss.approximated ? `approximated: ${loss.kind}` : `dropped: ${loss.kind}`)));
}

function timelineRow(row) {
  const outs = row.events.map((event) => event.out).filter(Boolean).join("");
  return el("tr", { class: row.source.startsWith("gateway") ? "gateway" : "" },
    el("td", { class: "num" }, row.at_ms.toFixed(1)),
    el("td", { class: "frame" }, row.frame ? el("pre", {}, row.frame.trimEnd()) : el("span", { class: "source" }, row.source)),
    el("td", {}, row.events.length ? row.events.map(eventLine) : el("span", { class: "source" }, "no event")),
    el("td", { class: "out" }, outs ? el("pre", {}, outs.trimEnd()) : el("span", { class: "source" }, row.events.length ? "nothing written" : "")),
    el("td", { class: "num" }, row.took_ms === null ? "–" : ms(row.took_ms)));
}

function renderRun(view, fresh) {
  const run = view.run;
  state.run = run;
  $("run-title").textContent = `Run ${run.id} · ${run.route} · ${run.client_dialect} ← ${run.upstream_dialect}`;
  const facts = [
    ["Status", statusPill(run)], ["Outcome", outcomePill(run)], ["First event", ms(run.ttfe_ms)],
    ["Duration", run.in_flight ? "running…" : ms(run.duration_ms)],
    ["Events in / out", `${run.events_in} / ${run.events_out}${run.frames_in !== null ? ` (${run.frames_in} upstream frames)` : ""}`],
    ["Dropped or approximated", lossPills(run.dropped)], ["Principal", run.key_id ? `key ${run.key_id}` : "anonymous"],
    ["Conversation", run.conversation_id || "–"], ["Request", run.request_id], ["Also", flags(run)],
    ["Judged", judged(run, view.captured ? (view.after || 0) + (view.rows || []).length : 0)],
  ];
  $("facts").replaceChildren(...facts.map(([name, value]) => el("div", {}, el("dt", {}, name), el("dd", {}, value))));
  const download = $("download");
  download.href = `${base}/api/runs/${run.id}/recording`;
  const downloadable = view.captured && run.bodies && !run.in_flight;
  download.setAttribute("aria-disabled", downloadable ? "false" : "true");
  download.title = downloadable ? "" : !view.captured ? "this run was not captured" : !run.bodies ? "this route does not show bodies" : "the run has not ended";
  $("not-captured").hidden = view.captured;
  $("not-captured").textContent = view.captured ? "" : "This run started while nobody watched: only its summary was kept. Runs that start while this page is open are captured whole.";
  $("mapping").hidden = !view.mapping;
  if (view.mapping) $("mapping").replaceChildren(el("strong", {}, "Conversation mapping: "), view.mapping);
  renderAttempts(view.attempts);
  $("upstream-request-title").textContent = run.upstream ? `Upstream request (${run.upstream})` : "Upstream request";
  if (!view.captured) {
    $("client-request").replaceChildren(); $("upstream-request").replaceChildren();
    $("timeline").tBodies[0].replaceChildren();
    return;
  }
  renderRequest($("client-request"), view.client_request, view.client_response, run.client_dialect, "client");
  renderRequest($("upstream-request"), view.upstream_request, view.upstream_response, run.upstream_dialect,
    view.attempts && view.attempts.length ? "moved" : "upstream");
  $("upstream-col").textContent = `Upstream frame (${run.upstream_dialect})`;
  $("client-col").textContent = `Client frames (${run.client_dialect})`;
  const tbody = $("timeline").tBodies[0];
  if (fresh) { tbody.replaceChildren(); state.rows = []; }
  // A live update resends the rows from the last one it had shown, which may have changed since (its write time).
  const first = view.after || 0;
  for (const [index, row] of (view.rows || []).entries()) {
    const at = first + index;
    const node = timelineRow(row);
    if (at < tbody.rows.length) tbody.rows[at].replaceWith(node); else tbody.append(node);
  }
  state.after = Math.max(0, tbody.rows.length - 1);
  markBroken(run, tbody);
}

async function openRun(id, push = true) {
  state.open = id;
  state.selected = id;
  if (push && location.hash !== `#run/${id}`) history.pushState(null, "", `#run/${id}`);
  $("list-view").hidden = true;
  $("run-view").hidden = false;
  const response = await fetch(`${base}/api/runs/${id}`, { credentials: "same-origin" });
  if (!response.ok) {
    $("run-title").textContent = `Run ${id}: ${response.status === 404 ? "forgotten (the inspector keeps the last runs)" : `error ${response.status}`}`;
    return;
  }
  renderRun(await response.json(), true);
  listen();
  $("back").focus();
}

function showList(push = true) {
  state.open = 0;
  if (push && location.hash) history.pushState(null, "", location.pathname);
  $("run-view").hidden = true;
  $("list-view").hidden = false;
  renderList();
  listen();
  focusSelected();
}

// Live updates

function listen() {
  if (state.source) state.source.close();
  const source = new EventSource(`${base}/api/live?run=${state.open || 0}&after=${state.open ? state.after : 0}`);
  state.source = source;
  source.addEventListener("open", () => { $("live").textContent = "live"; $("live").className = "live on"; });
  source.addEventListener("runs", (message) => {
    for (const run of JSON.parse(message.data)) state.runs.set(run.id, run);
    if (!state.open) renderList();
  });
  const forget = (ids) => {
    for (const id of ids) state.runs.delete(id);
    if (!state.open) renderList();
  };
  source.addEventListener("kept", (message) => {
    const kept = new Set(JSON.parse(message.data));
    forget([...state.runs.keys()].filter((id) => !kept.has(id)));
  });
  source.addEventListener("gone", (message) => forget(JSON.parse(message.data)));
  source.addEventListener("run", (message) => {
    const view = JSON.parse(message.data);
    if (view.run.id === state.open) renderRun(view, false);
  });
  source.addEventListener("error", () => {
    $("live").textContent = "reconnecting…";
    $("live").className = "live off";
    source.close();
    if (state.source === source) setTimeout(listen, 1000);  // from where the page is, not where the stream began
  });
}

// Keys

document.addEventListener("keydown", (event) => {
  if (event.altKey || event.ctrlKey || event.metaKey) return;
  const typing = event.target instanceof HTMLInputElement;
  if (typing) {
    if (event.key === "Escape") { event.target.blur(); focusSelected(); }
    if (event.key === "ArrowDown" || event.key === "Enter") { event.preventDefault(); focusSelected(); }
    return;
  }
  if (event.key === "/") { event.preventDefault(); if (state.open) showList(); $("filter").focus(); return; }
  if (state.open) {
    if (event.key === "Escape" || event.key === "Backspace") { event.preventDefault(); showList(); }
    if (event.key === "d" && $("download").getAttribute("aria-disabled") !== "true") $("download").click();
    return;
  }
  if (event.key === "j" || event.key === "ArrowDown") { event.preventDefault(); move(1); }
  if (event.key === "k" || event.key === "ArrowUp") { event.preventDefault(); move(-1); }
  if (event.key === "Enter" && state.selected) { event.preventDefault(); openRun(state.selected); }
});

$("filter").addEventListener("input", renderList);
$("runs").tBodies[0].addEventListener("click", (event) => {
  const row = event.target.closest("tr[data-id]");
  if (row) openRun(Number(row.dataset.id));
});
$("back").addEventListener("click", () => showList());
window.addEventListener("popstate", () => route(false));

function route(push) {
  const found = /^#run\/(\d+)$/.exec(location.hash);
  if (found) openRun(Number(found[1]), push); else showList(push);
}

(async function start() {
  const response = await fetch(`${base}/api/runs`, { credentials: "same-origin" });
  if (response.ok) for (const run of (await response.json()).runs) state.runs.set(run.id, run);
  route(false);
})();
