// The explorer page's script (page.html): it reads its own URL, asks the app's JSON API (app.py) and draws
// the state, the actions, the properties, the design history and the legend.
"use strict";
const $ = (id) => document.getElementById(id);
let view = null;      // the last /api/state answer
let choices = null;   // /api/choices
// What names a design in a URL: scenario, variant or log, and every knob (filled from /api/choices).
let DESIGN_KEYS = ["scenario", "variant", "log"];

function params() { return new URLSearchParams(location.search); }
function esc(text) { const d = document.createElement("div"); d.textContent = String(text); return d.innerHTML; }
function showError(message) { const e = $("error"); e.textContent = message; e.style.display = message ? "block" : "none"; }
// Buttons that need a state shown: disabled while an error stands in its place (and before the first state).
const NEEDS_VIEW = ["back", "forward", "compare-release", "compare-publication", "compare-knob"];
function setLive(live) {
  for (const id of NEEDS_VIEW) $(id).disabled = !live;
  if (!live) { $("enabled").innerHTML = ""; $("compare").innerHTML = ""; $("compare-words").textContent = ""; }
}
function showNote(message) { const e = $("note"); e.textContent = message || ""; e.style.display = message ? "block" : "none"; }

async function api(url, options) {
  const response = await fetch(url, options);
  let body;
  try { body = await response.json(); } catch (e) { body = { error: `HTTP ${response.status}` }; }
  if (!response.ok) throw new Error(body.error || `HTTP ${response.status}`);
  return body;
}

function designQuery(p) {
  const q = new URLSearchParams();
  for (const k of DESIGN_KEYS) if (p.has(k)) q.set(k, p.get(k));
  return q;
}

function go(query, push = true) {
  const url = "?" + query.toString();
  if (push) history.pushState(null, "", url); else history.replaceState(null, "", url);
  return render();
}

function step(at) {
  const p = params();
  p.set("at", String(at));
  return go(p);
}

function take(action) {
  if (!view) return;
  const p = params();
  const path = view.path.slice(0, view.at).map((s) => s.action);
  path.push(action);
  p.set("path", path.join(","));
  p.set("at", String(path.length));
  if (p.has("mark") && Number(p.get("mark")) > view.at) { p.delete("mark"); p.delete("property"); }
  return go(p);
}

function renderState(state, changed) {
  const hot = new Set(changed);
  const cell = (slot, value) => `<td data-slot="${esc(slot)}" class="${hot.has(slot) ? "changed" : ""}">${esc(value)}</td>`;
  let html = "";
  const reqs = state.requests || {};
  const cols = [];
  for (const r of Object.values(reqs)) for (const k of Object.keys(r)) if (!cols.includes(k)) cols.push(k);
  html += "<table id='requests'><tr><th>request</th>" + cols.map((c) => `<th>${esc(c)}</th>`).join("") + "</tr>";
  for (const [name, r] of Object.entries(reqs)) {
    html += `<tr data-request="${esc(name)}"><th>${esc(name)}</th>` +
      cols.map((c) => cell(`requests.${name}.${c}`, c in r ? r[c] : "")).join("") + "</tr>";
  }
  html += "</table>";
  const small = (title, obj, key) => {
    const entries = Object.entries(obj || {});
    if (!entries.length) return `<p><b>${title}</b>: <span class="${[...hot].some((s) => s.startsWith(key)) ? "changed" : ""}">none</span></p>`;
    return `<p><b>${title}</b>: ` + entries.map(([k, v]) =>
      `<span data-slot="${esc(key + "." + k)}" class="${hot.has(key + "." + k) ? "changed" : ""}">${esc(k)} ${esc(v)}</span>`).join(", ") + "</p>";
  };
  html += small("flights", state.flights, "flights");
  html += small("index", state.index, "index");
  html += `<p><b>released</b>: <span data-slot="released" class="${hot.has("released") ? "changed" : ""}">${esc((state.released || []).join(", ") || "none")}</span></p>`;
  const pages = Object.entries(state.pages || {});
  html += "<table id='pages'><tr><th>page</th><th>state</th><th>refs</th></tr>";
  for (const [name, pg] of pages) {
    html += `<tr><th>${esc(name)}</th>${cell(`pages.${name}.state`, pg.state)}${cell(`pages.${name}.refs`, pg.refs)}</tr>`;
  }
  if (!pages.length) html += "<tr><td colspan='3' class='muted'>no page cached or referenced</td></tr>";
  html += "</table>";
  if (state.pool) html += small("pool", state.pool, "pool");
  if (Object.keys(state.ghosts || {}).length) html += small("ghosts (what the properties remember)", state.ghosts, "ghosts");
  $("state").innerHTML = html;
}

// After each render, body[data-shown] is the query it drew (a state or an error): what a test waits for.
function render() {
  showError("");
  const asked = location.search;
  return api("/api/state" + asked).then((v) => {
    view = v;
    setLive(true);
    const p = params();
    $("title").textContent = v.title;
    document.title = `flightcheck explorer: ${v.title}`;
    $("position").textContent = `step ${v.at} of ${v.length}`;
    $("back").disabled = v.at === 0;
    $("forward").disabled = v.at >= v.length;
    $("last").textContent = v.last ? `after ${v.last.n}. ${v.last.action}: ${v.last.changes}` : "(initial state)";
    const crumbs = [`<li class="crumb ${v.at === 0 ? "current" : ""}" data-n="0">start</li>`];
    for (const s of v.path) {
      const cls = ["crumb", s.n === v.at ? "current" : "", s.n > v.at ? "after" : "", s.n === v.mark ? "marked" : "",
                   s.breaks.length ? "breaks" : ""].join(" ");
      crumbs.push(`<li class="${cls}" data-n="${s.n}" title="${esc(s.changes)}">${s.n}. ${esc(s.action)}</li>`);
    }
    $("crumbs").innerHTML = crumbs.join("");
    renderState(v.state, v.changed);
    $("enabled").innerHTML = v.enabled.length ? v.enabled.map((a) =>
      `<button class="action" data-action="${esc(a.action)}"><span class="name">${esc(a.action)}</span> ` +
      `${a.engine ? "" : "<span class='env'>(the environment)</span> "}${esc(a.changes)}` +
      (a.breaks.length ? ` <span class="breaks">breaks ${esc(a.breaks.join(", "))}</span>` : "") + "</button>").join("")
      : "<p class='muted'>nothing is enabled: every request has terminated, or nothing can move</p>";
    // One line per reason, with every action it disables and the guard's conjuncts that are false.
    $("disabled").innerHTML = v.disabled_groups.map((g) =>
      `<li ${g.actions.length === 1 ? `data-action="${esc(g.actions[0])}" ` : ""}data-actions="${esc(g.actions.join(" "))}">` +
      `<span class="name">${g.actions.map(esc).join(", ")}</span>: <span class="why">${esc(g.why)}</span>` +
      (g.guard.length ? ` <span class="guard">false in the guard: ${g.guard.map((c) => `<code>${esc(c)}</code>`).join(", ")}</span>` : "") +
      "</li>").join("");
    $("properties").innerHTML = "<tr><th>property</th><th>kind</th><th>here</th></tr>" + v.properties.map((x) => {
      // A property of whole runs is judged on the run a counterexample shows: violated at its marked step.
      const broken = x.holds === null && x.name === v.property && v.mark !== null && v.at >= v.mark;
      const [cls, word] = broken ? ["violated", "VIOLATED by this run"] : x.holds === null ? ["run", "about whole runs"] : x.holds ? ["holds", "holds"] :
        x.kind === "sometimes" ? ["run", "not here"] : ["violated", "VIOLATED"];
      return `<tr data-property="${esc(x.name)}" title="${esc(x.story)}"><td>${esc(x.name)}</td><td>${esc(x.kind)}</td><td class="value ${cls}">${word}</td></tr>`;
    }).join("");
    $("diagram").innerHTML = v.diagram || "<p class='muted'>take a step to start the diagram</p>";
    const notes = [];
    if (v.mark !== null && v.property) {
      notes.push(`Counterexample: ${v.property} breaks at step ${v.mark} (outlined in red).` +
        (v.at === v.mark ? " Step back and choose another action to see it hold." : ""));
      // The harm, where it happens: what the breaking step did (the ghosts it raised in capitals), and
      // what the property asks.
      const breaking = v.path[v.mark - 1];
      const asked = v.properties.find((x) => x.name === v.property);
      if (breaking) notes.push(`Step ${v.mark}, ${breaking.action}: ${breaking.changes}.`);
      if (asked) notes.push(`${v.property}: ${asked.story}`);
    }
    if (v.log) {
      notes.push(`Engine log ${v.log.id}: ${v.log.events} events, ${v.log.actions} spec actions.`);
      if (v.log.departure) notes.push("The engine departs from the spec after the last step:\n" + v.log.departure);
    }
    if (v.violated.length) notes.push(`This state violates ${v.violated.join(", ")}.`);
    showNote(notes.join("\n"));
    $("compare").innerHTML = ""; $("compare-words").textContent = "";
    syncMenus(v.query);
    showViolations();
    document.body.dataset.shown = asked;
  }).catch((e) => { view = null; setLive(false); showError(e.message); document.body.dataset.shown = asked; });
}

let violationsFor = null;  // the design query whose violations are listed
function showViolations() {
  const q = new URLSearchParams(view.query).toString();  // the design as the app writes it: one search per design
  if (q === violationsFor) return Promise.resolve();
  violationsFor = q;
  $("violations").innerHTML = "<li class='muted'>searching every property's shortest counterexample…</li>";
  return api("/api/violations?" + q).then((found) => {
    if (violationsFor !== q) return;
    $("violations").innerHTML = found.violations.length ? found.violations.map((v) => v.query
      ? `<li data-property="${esc(v.property)}"><a href="?${new URLSearchParams(v.query)}" title="${esc(v.story)}">${esc(v.property)}</a> ` +
        `<span class="muted">(${esc(v.kind)}, ${v.length} steps)</span>: ${esc(v.note)}</li>`
      : `<li data-property="${esc(v.property)}"><b>${esc(v.property)}</b> <span class="muted">(${esc(v.kind)})</span>: ${esc(v.note)}</li>`).join("")
      : "<li class='holds'>none: the design keeps every property on this scenario</li>";
  }).catch((e) => {
    if (violationsFor !== q) return;
    violationsFor = null;
    $("violations").innerHTML = `<li class="muted">${esc(e.message)}</li>`;
  });
}

function syncMenus(query) {
  if (!choices) return;
  $("scenario").value = query.log ? "" : (query.scenario || "");
  $("variant").value = view.variant;
  $("release").value = view.policy.release;
  $("publication").value = view.policy.publication;
  $("property").value = view.property || "";
  for (const k of choices.knobs) {
    const el = knobControl(k.name);
    const value = k.policy ? view.policy[k.name] : view.options[k.name];
    if (k.kind === "bool") el.checked = Boolean(value); else el.value = String(value);
  }
}

// A knob's control: its own in the knobs row, or the header's menu (release, publication).
function knobControl(name) { return $("knob-" + name) || $(name); }

// A knob's control changed: the design under its new value, from the initial state (the path may not be a run of it).
function turnKnob(k) {
  const el = knobControl(k.name);
  const q = view ? new URLSearchParams(view.query) : designQuery(params());
  q.set(k.name, k.kind === "bool" ? (el.checked ? "1" : "0") : el.value);
  showNote("");
  return go(q);
}

async function compareUnder(field) {
  if (!view) return;
  showError("");
  const p = params();
  const q = designQuery(p);
  q.set("path", view.path.slice(0, view.at).map((s) => s.action).join(","));
  q.set("field", field);
  try {
    const c = await api("/api/compare?" + q.toString());
    const first = c.first_difference;
    $("compare-words").innerHTML = `${esc(field)}: this design ${esc(c.this)}, the other ${esc(c.other)}. ` +
      (first === null ? "The two agree on every step of the path so far." : `They first differ at step ${first}.`) +
      ` <a id="open-other" href="#">open the path under ${esc(c.other)}</a>`;
    $("compare").innerHTML = `<tr><th>#</th><th>action</th><th>${esc(c.this)}</th><th>${esc(c.other)}</th></tr>` +
      c.steps.map((s) => `<tr class="${s.n === first ? "first" : ""}"><td>${s.n}</td><td>${esc(s.action)}</td><td>${esc(s.this)}</td><td>${esc(s.other)}</td></tr>`).join("");
    $("open-other").onclick = (ev) => {
      ev.preventDefault();
      const o = new URLSearchParams(c.other_query);
      o.set("path", c.other_path.join(","));
      o.set("at", String(c.other_path.length));
      go(o);
    };
  } catch (e) { showError(e.message); }
}

async function setup() {
  setLive(false);
  try {
    choices = await api("/api/choices");
  } catch (e) { showError(e.message); return; }
  const fill = (id, values, blank) => {
    $(id).innerHTML = (blank ? `<option value="">${blank}</option>` : "") + values.map((v) => `<option>${esc(v)}</option>`).join("");
  };
  const legend = choices.legend;
  const part = (title, key, rows) => `<h3>${title}</h3><dl data-legend="${key}">` +
    rows.map((r) => `<dt>${esc(r.name)}</dt><dd>${esc(r.meaning)}</dd>`).join("") + "</dl>";
  $("legend-spec").innerHTML = part("Phases of a request", "phases", legend.phases) +
    part("A request's fields", "fields", legend.fields) + part("Flights", "flights", legend.flights) +
    part("Pages (A0: page 0 of prompt A; refs: the requests holding it)", "pages", legend.pages) +
    part("Ghosts (what the properties remember, shown when raised)", "ghosts", legend.ghosts);
  $("variants").innerHTML = choices.variants.map((v) => {
    const on = [v.demo, ...Object.entries(v.demo_policy).map(([k, x]) => `${k} ${x}`)].join(", ");
    const verdict = v.violates ? `<span class="verdict bad">breaks ${esc(v.violates)}</span>` :
      `<span class="verdict">correct</span>`;
    return `<li data-variant="${esc(v.name)}"><span class="vname">${esc(v.name)}</span> ${verdict} ` +
      `<span class="muted">(on ${esc(on)})</span>: ${esc(v.story)}` +
      `<button class="open-variant" data-variant="${esc(v.name)}">open</button>` +
      (v.violates ? `<button class="cx-variant" data-variant="${esc(v.name)}">its counterexample</button>` : "") + "</li>";
  }).join("");
  $("knobs").innerHTML = "<b>knobs</b> " + choices.knobs.filter((k) => !$(k.name)).map((k) => {
    const id = "knob-" + k.name;
    const control = k.kind === "choice" ? `<select id="${id}">` + k.choices.map((c) => `<option>${esc(c)}</option>`).join("") + "</select>"
      : k.kind === "int" ? `<input id="${id}" type="number" min="1" max="999">` : `<input id="${id}" type="checkbox">`;
    return `<label data-knob="${esc(k.name)}">${esc(k.name.replace(/_/g, " "))} ${control}</label>`;
  }).join("");
  for (const k of choices.knobs) knobControl(k.name).onchange = () => turnKnob(k);
  DESIGN_KEYS = ["scenario", "variant", "log", ...choices.knobs.map((k) => k.name)];
  $("compare-field").innerHTML = choices.knobs.map((k) => `<option>${esc(k.name)}</option>`).join("");
  fill("scenario", choices.scenarios, "(the variant's own)");
  fill("variant", choices.variants.map((v) => v.name));
  fill("property", choices.properties.filter((p) => p.kind !== "sometimes").map((p) => p.name), "(the variant's own)");
  fill("release", choices.release);
  fill("publication", choices.publication);
  $("open").onclick = () => {
    const q = new URLSearchParams();
    if ($("scenario").value) q.set("scenario", $("scenario").value);
    if ($("variant").value !== "correct") q.set("variant", $("variant").value);
    q.set("release", $("release").value);
    q.set("publication", $("publication").value);
    showNote("");
    go(q);
  };
  $("cx-button").onclick = async () => {
    showError("");
    try {
      const q = designQuery(params());
      if ($("property").value) q.set("property", $("property").value);
      const found = await api("/api/counterexample?" + q.toString());
      await go(new URLSearchParams(found.query));
    } catch (e) { showError(e.message); }
  };
  $("load-file").onchange = async () => {
    const file = $("load-file").files[0];
    if (!file) return;
    showError("");
    try {
      const kind = $("load-kind").value;
      const loaded = await api(`/api/load?kind=${kind}&name=${encodeURIComponent(file.name)}`, { method: "POST", body: await file.text() });
      await go(new URLSearchParams(loaded.query));
    } catch (e) { showError(e.message); }
    $("load-file").value = "";
  };
  // A variant opens on its own scenario and policy: the menus then show that policy.
  $("variant").onchange = () => {
    const q = new URLSearchParams();
    if ($("variant").value !== "correct") q.set("variant", $("variant").value);
    showNote("");
    go(q);
  };
  $("variants").onclick = async (ev) => {
    const b = ev.target.closest("button");
    if (!b) return;
    const q = new URLSearchParams();
    if (b.dataset.variant !== "correct") q.set("variant", b.dataset.variant);
    showError(""); showNote("");
    if (b.classList.contains("open-variant")) return go(q);
    try {
      const found = await api("/api/counterexample?" + q.toString());
      await go(new URLSearchParams(found.query));
    } catch (e) { showError(e.message); }
  };
  $("violations").onclick = (ev) => {
    const a = ev.target.closest("a");
    if (!a) return;
    ev.preventDefault();
    go(new URLSearchParams(a.getAttribute("href").slice(1)));
  };
  $("back").onclick = () => view && step(view.at - 1);
  $("forward").onclick = () => view && step(view.at + 1);
  $("crumbs").onclick = (ev) => { const n = ev.target.dataset.n; if (n !== undefined) step(Number(n)); };
  $("enabled").onclick = (ev) => { const b = ev.target.closest("button.action"); if (b) take(b.dataset.action); };
  $("compare-release").onclick = () => compareUnder("release");
  $("compare-publication").onclick = () => compareUnder("publication");
  $("compare-knob").onclick = () => compareUnder($("compare-field").value);
  window.onpopstate = () => render();
  await render();
}
setup();
