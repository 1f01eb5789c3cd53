// The push console: a client of the gateway's admin API with its session cookie (docs/console.md).
"use strict";

const $ = (id) => document.getElementById(id);
let csrf = "";
let settings = null;
let devices = [];
let keys = [];
let apps = [];

// --- Talking to the gateway ---------------------------------------------------------------------

class Failure extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// The answer's body as JSON; with `withHeaders`, [body, headers].
async function api(method, path, body, { withHeaders = false } = {}) {
  const headers = {};
  if (body !== undefined) headers["content-type"] = "application/json";
  if (method !== "GET") headers["x-herald-csrf"] = csrf;
  const response = await fetch(path, {
    method, headers, credentials: "same-origin", body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (_) { data = text; }
  if (!response.ok) {
    if (response.status === 401 && path !== "/console/session") showSignIn();
    throw new Failure(response.status, (data && data.error && data.error.message) || `${response.status}`);
  }
  return withHeaders ? [data, response.headers] : data;
}

// What an answer of the delivery log says it left out: rows it could not read (damaged, or written by
// a newer release of Herald), or "" when it left out none.
function unreadableNote(headers) {
  const count = Number(headers.get("herald-unreadable-log-rows") || 0);
  if (!count) return "";
  const one = count === 1;
  return `${count.toLocaleString()} ${one ? "row" : "rows"} of the log could not be read ` +
    `(damaged, or written by a newer release of Herald) and ${one ? "is" : "are"} left out.`;
}

// --- Small helpers -------------------------------------------------------------------------------

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child ?? "")));
  return node;
}

function fill(tbody, rows) {
  tbody.replaceChildren(...rows);
  if (rows.length === 0) {
    const columns = tbody.closest("table").querySelectorAll("th").length;
    tbody.append(el("tr", {}, el("td", { colspan: columns, class: "muted" }, "none")));
  }
}

function when(ms) {
  if (ms === null || ms === undefined) return "";
  const d = new Date(ms);
  return d.toLocaleString(undefined, { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
}

function badge(text) { return el("span", { class: `badge ${text}` }, text); }

function options(select, values, keep = true) {
  const previous = select.value;
  select.replaceChildren(...values.map(([value, label]) => el("option", { value }, label)));
  if (keep && values.some(([value]) => value === previous)) select.value = previous;
}

// --- Sign-in -------------------------------------------------------------------------------------

function showSignIn(message = "") {
  $("app").hidden = true;
  $("signin").hidden = false;
  $("signin-error").textContent = message;
  $("signin-token").focus();
}

async function signIn(token) {
  try {
    const session = await api("POST", "/console/session", { token });
    csrf = session.csrf;
    await start();
  } catch (error) {
    showSignIn(error.status === 401 ? "That is not this gateway's admin token." : error.message);
  }
}

$("signin-form").addEventListener("submit", (event) => {
  event.preventDefault();
  signIn($("signin-token").value);
});

$("signout").addEventListener("click", async () => {
  await api("DELETE", "/console/session").catch(() => {});
  csrf = "";
  if (events) events.close();
  showSignIn("Signed out.");
});

// --- Views ---------------------------------------------------------------------------------------

function show(view) {
  for (const button of document.querySelectorAll("#tabs button")) {
    button.classList.toggle("active", button.dataset.view === view);
  }
  for (const section of document.querySelectorAll(".view")) section.hidden = section.id !== `view-${view}`;
  const load = { log: loadHistory, devices: loadDevices, faults: loadFaults, feedback: loadFeedback, metrics: loadMetrics }[view];
  if (load) load().catch((error) => console.error(error));
}

for (const button of document.querySelectorAll("#tabs button")) {
  button.addEventListener("click", () => show(button.dataset.view));
}

async function loadDirectory() {
  [devices, keys, apps] = await Promise.all([api("GET", "/devices"), api("GET", "/keys"), api("GET", "/apps")]);
  options($("key"), keys.filter((k) => !k.revoked).map((k) => [k.keyID, `${k.keyID} (team ${k.teamID})`]));
  const appValues = apps.map((a) => [a.bundleID, a.bundleID]);
  options($("app-select"), appValues);
  options($("history-app"), [["", "(all)"], ...appValues]);
  options($("feedback-app"), appValues);
  chooseDevices();
  restoreKey();
}

// --- Send ----------------------------------------------------------------------------------------

const templates = {
  alert: { type: "alert", payload: { aps: { alert: { title: "Hello", body: "from the Herald console" }, sound: "default", badge: 1 } } },
  background: { type: "background", priority: "5", payload: { aps: { "content-available": 1 }, refresh: "inbox" } },
  badge: { type: "alert", payload: { aps: { badge: 7 } } },
  localized: { type: "alert", payload: { aps: { alert: { "title-loc-key": "GAME_INVITE_TITLE", "loc-key": "GAME_INVITE", "loc-args": ["Jenna", "Frank"] } } } },
  liveactivity: { type: "liveactivity", payload: { aps: { timestamp: 0, event: "update", "content-state": { status: "Out for delivery", eta: "12:40" } } } },
};

function applyTemplate() {
  const template = templates[$("template").value];
  const payload = structuredClone(template.payload);
  if (payload.aps.timestamp === 0) payload.aps.timestamp = Math.floor(Date.now() / 1000);
  $("payload").value = JSON.stringify(payload, null, 2);
  $("push-type").value = template.type;
  $("priority").value = template.priority || "";
  checkPayload();
}

function chooseDevices() {
  const app = $("app-select").value;
  const environment = $("environment").value;
  const choices = [];
  for (const device of devices) {
    for (const r of device.apps) {
      if (r.bundleID === app && r.environment === environment && !r.invalidatedAt) {
        choices.push([r.token, `${device.id}${device.online ? " (online)" : " (offline)"}`]);
      }
    }
  }
  options($("device"), [["", "(paste a token)"], ...choices]);
  if ($("device").value === "" && choices.length > 0) $("device").value = choices[0][0];
  if ($("device").value) $("token").value = $("device").value;
}

// The key's .p8: what this tab last used with it, else what the gateway was given for it (herald up
// gives the demo key's), else empty.
function restoreKey() {
  const saved = sessionStorage.getItem(`p8:${$("key").value}`);
  $("private-key").value = saved || (settings && settings.signingKeys[$("key").value]) || "";
}

function checkPayload() {
  try {
    const value = JSON.parse($("payload").value);
    if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error("must be a JSON object");
    $("payload-error").textContent = "";
    return true;
  } catch (error) {
    $("payload-error").textContent = `payload: ${error.message}`;
    return false;
  }
}

function form(dryRun) {
  const number = (id) => ($(id).value === "" ? undefined : Number($(id).value));
  return {
    authentication: $("auth").value, keyID: $("key").value || undefined, privateKey: $("private-key").value,
    environment: $("environment").value, app: $("app-select").value, topic: $("topic").value || undefined,
    token: $("token").value.trim(), pushType: $("push-type").value || undefined, priority: number("priority"),
    expiration: number("expiration"), collapseID: $("collapse-id").value || undefined, payload: $("payload").value,
    dryRun,
  };
}

async function send(dryRun) {
  if (!checkPayload()) return;
  if ($("auth").value === "token" && $("key").value) {
    sessionStorage.setItem(`p8:${$("key").value}`, $("private-key").value);
  }
  $("send").disabled = true;
  try {
    const result = await api("POST", "/console/send", form(dryRun));
    $("commands").hidden = false;
    $("curl").textContent = result.curl;
    $("herald").textContent = result.herald;
    showWarnings(result.warnings || []);
    if (result.invalid) {
      $("payload-error").textContent = `${result.invalid.key}: ${result.invalid.rule}` +
        (result.invalid.reason ? ` (the gateway would answer ${result.invalid.reason})` : "");
      $("send-result").hidden = true;
      return;
    }
    $("payload-error").textContent = "";
    if (result.answer) showAnswer(result.answer);
  } catch (error) {
    $("payload-error").textContent = error.message;
  } finally {
    $("send").disabled = false;
  }
}

// What Apple would accept and then handle quietly, as the gateway (or, for a dry run, the console)
// named it: one line each, with the page of Apple's documentation that says so.
function showWarnings(warnings) {
  $("send-warnings").hidden = warnings.length === 0;
  $("send-warnings").replaceChildren(...warnings.map((w) => el("li", { "data-warning": w.name },
    el("strong", {}, w.name), ` ${w.explanation} `, el("span", { class: "muted" }, `(Apple: ${w.source})`))));
}

function showAnswer(answer) {
  $("send-result").hidden = false;
  const status = $("answer-status");
  status.textContent = answer.status === 200 ? "200" : `${answer.status} ${answer.reason || ""}`;
  status.className = `status ${answer.status === 200 ? "ok" : "fail"}`;
  const rows = [
    ["apns-id", answer.apnsID], ["apns-unique-id", answer.uniqueID], ["reason", answer.reason],
    ["herald-warnings", answer.warnings],
    ["timestamp", answer.timestamp ? when(answer.timestamp) : undefined],
    ["latency", `${answer.milliseconds.toFixed(1)} ms`], ["sent to", answer.url],
  ].filter(([, value]) => value);
  $("answer-fields").replaceChildren(...rows.flatMap(([name, value]) => [el("dt", {}, name), el("dd", { id: `answer-${name}` }, value)]));
  const id = answer.uniqueID || answer.apnsID;
  // Refused pushes are in the log too, with why.
  $("answer-log").hidden = !id;
  $("answer-log").onclick = () => { show("log"); lookup(id); };
}

$("send-form").addEventListener("submit", (event) => { event.preventDefault(); send(false); });
$("show-commands").addEventListener("click", () => send(true));
$("template").addEventListener("change", applyTemplate);
$("payload").addEventListener("input", checkPayload);
$("app-select").addEventListener("change", chooseDevices);
$("environment").addEventListener("change", chooseDevices);
$("device").addEventListener("change", () => { if ($("device").value) $("token").value = $("device").value; });
$("key").addEventListener("change", restoreKey);
$("auth").addEventListener("change", () => {
  for (const node of document.querySelectorAll(".for-token")) node.hidden = $("auth").value !== "token";
});
$("p8-file").addEventListener("change", async () => {
  const file = $("p8-file").files[0];
  if (file) $("private-key").value = await file.text();
});

// --- Delivery log --------------------------------------------------------------------------------

async function lookup(id) {
  $("lookup").value = id;
  $("lookup-result").hidden = false;
  $("lookup-title").textContent = id;
  try {
    const [events, headers] = await api("GET", `/deliveries/${encodeURIComponent(id)}`, undefined, { withHeaders: true });
    const left = unreadableNote(headers);
    $("timeline").replaceChildren(...events.map((e) =>
      el("li", { class: e.kind, "data-state": e.state || "" }, badge(e.kind), el("time", {}, when(e.at)),
        e.state ? el("span", { class: "apple-state" }, stateTitle(e.state)) : "",
        e.detail ? el("div", { class: "muted" }, e.detail) : "")),
      ...(left ? [el("li", { class: "unreadable muted" }, left)] : []));
  } catch (error) {
    $("timeline").replaceChildren(el("li", { class: "refused" }, error.message));
  }
}

$("lookup-form").addEventListener("submit", (event) => { event.preventDefault(); lookup($("lookup").value.trim()); });

async function loadHistory() {
  const query = new URLSearchParams();
  for (const [name, id] of [["app", "history-app"], ["device", "history-device"], ["status", "history-status"], ["reason", "history-reason"]]) {
    if ($(id).value.trim()) query.set(name, $(id).value.trim());
  }
  const [entries, headers] = await api("GET", `/deliveries?${query}`, undefined, { withHeaders: true });
  const left = unreadableNote(headers);
  $("history-note").textContent = `The newest ${entries.length} matching pushes among the log's last ` +
    `${settings.historyRows.toLocaleString()} rows; the log keeps ${settings.logRetentionDays} days.` +
    (left ? ` ${left}` : "");
  fill($("history").tBodies[0], entries.map((e) => el("tr", {},
    el("td", {}, when(e.firstAt)),
    el("td", {}, el("a", { onclick: () => lookup(e.uniqueID || e.apnsID) }, e.apnsID)),
    el("td", {}, e.topic || ""), el("td", {}, e.device || ""),
    el("td", {}, badge(e.status), e.state ? el("div", { class: "apple-state" }, stateTitle(e.state)) : ""),
    el("td", {}, e.reason || "", ...(e.warnings || []).map((w) => el("span", { class: "badge warning", title: warningText(w) }, w))))));
}

// Apple's name for one of its delivery states, as its Push Notifications Console shows it.
function stateTitle(name) {
  const state = settings.states.find((s) => s.name === name);
  return state ? state.title : name;
}

function warningText(name) {
  const warning = settings.warnings.find((w) => w.name === name);
  return warning ? warning.explanation : name;
}

$("history-filter").addEventListener("submit", (event) => { event.preventDefault(); loadHistory(); });

// --- Metrics: Apple's delivery states by day ----------------------------------------------------

async function loadMetrics() {
  options($("metrics-app"), [["", "(all)"], ...apps.map((a) => [a.bundleID, a.bundleID])]);
  const query = new URLSearchParams({ days: $("metrics-days").value });
  if ($("metrics-app").value) query.set("app", $("metrics-app").value);
  const metrics = await api("GET", `/delivery-metrics?${query}`);
  const days = [];
  for (let day = new Date(`${metrics.from}T00:00:00Z`); day.toISOString().slice(0, 10) <= metrics.to;
    day = new Date(day.getTime() + 86400000)) days.push(day.toISOString().slice(0, 10));
  const count = {};
  for (const c of metrics.counts) count[`${c.state} ${c.day}`] = (count[`${c.state} ${c.day}`] || 0) + c.count;
  $("metrics-table").tHead.replaceChildren(el("tr", {}, el("th", {}, "state"), ...days.map((d) => el("th", { class: "number" }, d.slice(5))), el("th", { class: "number" }, "total")));
  fill($("metrics-table").tBodies[0], metrics.states.map((s) => {
    const cells = days.map((d) => count[`${s.name} ${d}`] || 0);
    const total = cells.reduce((a, b) => a + b, 0);
    return el("tr", { "data-state": s.name, class: total ? "" : "muted" }, el("td", {}, s.title),
      ...cells.map((n) => el("td", { class: "number" }, n ? n.toLocaleString() : "·")), el("td", { class: "number total" }, total.toLocaleString()));
  }));
}

$("metrics-filter").addEventListener("submit", (event) => { event.preventDefault(); loadMetrics(); });

// --- Devices and apps ----------------------------------------------------------------------------

async function loadDevices() {
  await loadDirectory();
  const teams = await api("GET", "/teams");
  fill($("devices").tBodies[0], devices.map((d) => el("tr", {},
    el("td", {}, el("code", {}, d.id)),
    el("td", {}, badge(d.deletedAt ? "deleted" : d.online ? "online" : "offline")),
    el("td", {}, d.online ? "now" : when(d.lastSeen) || "not since the gateway started"),
    el("td", {}, d.stored),
    el("td", {}, ...d.apps.map((r) => el("div", {}, `${r.bundleID} (${r.environment}) `, el("code", {}, r.token),
      r.invalidatedAt ? el("span", { class: "badge revoked" }, "invalid") : ""))))));
  fill($("teams").tBodies[0], teams.map((t) => el("tr", {}, el("td", {}, t.id), el("td", {}, t.name), el("td", {}, t.suspended ? badge("suspended") : "active"))));
  fill($("keys").tBodies[0], keys.map((k) => el("tr", {}, el("td", {}, k.keyID), el("td", {}, k.teamID),
    el("td", {}, (k.topics || ["every app of the team"]).join(", ")), el("td", {}, k.environment || "both"),
    el("td", {}, k.revoked ? badge("revoked") : "active"))));
  fill($("apps").tBodies[0], apps.map((a) => el("tr", {}, el("td", {}, a.bundleID), el("td", {}, a.teamID),
    el("td", {}, el("button", { class: "quiet", onclick: () => downloadCertificate(a.bundleID) }, "Download a development certificate")))));
}

async function downloadCertificate(bundleID) {
  const issued = await api("POST", `/apps/${encodeURIComponent(bundleID)}/certificates`, { environments: ["development"] });
  // One PEM file, the certificate then its key, each block on lines of its own.
  const pem = `${issued.certificate.trimEnd()}\n${issued.privateKey.trimEnd()}\n`;
  const blob = new Blob([pem], { type: "application/x-pem-file" });
  const link = el("a", { href: URL.createObjectURL(blob), download: `${bundleID}.pem` });
  document.body.append(link);
  link.click();
  link.remove();
}

// --- Faults --------------------------------------------------------------------------------------

async function loadFaults() {
  const rules = await api("GET", "/faults");
  fill($("faults").tBodies[0], rules.map((r) => el("tr", {},
    el("td", {}, r.id), el("td", {}, r.topic || "(every)"), el("td", {}, r.tokenPrefix || "(every)"),
    el("td", {}, r.reason || (r.deviceLimit ? "TooManyRequests" : "(normal)")), el("td", {}, delayText(r)),
    el("td", {}, connectionText(r)),
    el("td", {}, [r.deviceLimit ? `over ${r.deviceLimit} a device per ${r.windowSeconds} s` : "",
      r.probability !== undefined ? `probability ${r.probability}` : ""].filter((t) => t).join(", ")),
    el("td", {}, r.remaining ?? "until removed"),
    el("td", {}, el("button", { class: "quiet", onclick: async () => { await api("DELETE", `/faults/${r.id}`); loadFaults(); } }, "Remove")))));
}

function delayText(r) {
  const l = r.latency;
  if (!l) return r.delayMilliseconds ? `${r.delayMilliseconds} ms` : "";
  if (l.distribution === "fixed") return `${l.milliseconds} ms`;
  if (l.distribution === "uniform") return `${l.min}–${l.max} ms, uniform`;
  return `log-normal, p50 ${l.p50} ms, p99 ${l.p99} ms`;
}

function connectionText(r) {
  switch (r.connection) {
    case "goaway": return `GOAWAY ${r.goawayError || "NO_ERROR"}${r.afterStreams ? ` from push ${r.afterStreams}` : ""}`;
    case "close": return "closed, no answer";
    case "lower-streams": return `MAX_CONCURRENT_STREAMS ${r.maxConcurrentStreams ?? 1}`;
    case "refuse-handshake": return "TLS handshake refused";
    default: return "";
  }
}

// The latency field's numbers for the chosen distribution: "200", "50-300" or "80,900".
function latency() {
  const kind = $("fault-latency").value;
  if (!kind) return undefined;
  const n = $("fault-latency-values").value.split(/[-,\s]+/).filter((t) => t).map(Number);
  if (kind === "fixed") return { distribution: kind, milliseconds: n[0] };
  if (kind === "uniform") return { distribution: kind, min: n[0], max: n[1] };
  return { distribution: kind, p50: n[0], p99: n[1] };
}

$("fault-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const number = (id) => ($(id).value === "" ? undefined : Number($(id).value));
  const text = (id) => $(id).value.trim() || undefined;
  const rule = {
    topic: text("fault-topic"), tokenPrefix: text("fault-token"),
    reason: $("fault-reason").value || undefined, delayMilliseconds: number("fault-delay"), remaining: number("fault-remaining"),
    latency: latency(), probability: number("fault-probability"), connection: $("fault-connection").value || undefined,
    afterStreams: number("fault-after"), goawayError: $("fault-goaway-error").value || undefined,
    goawayReason: text("fault-goaway-reason"), maxConcurrentStreams: number("fault-streams"),
    deviceLimit: number("fault-device-limit"), windowSeconds: number("fault-window"),
  };
  try {
    await api("POST", "/faults", rule);
    $("fault-error").textContent = "";
    loadFaults();
  } catch (error) {
    $("fault-error").textContent = error.message;
  }
});
$("faults-clear").addEventListener("click", async () => { await api("DELETE", "/faults"); loadFaults(); });

// --- Feedback ------------------------------------------------------------------------------------

async function loadFeedback() {
  if (!$("feedback-app").value) return;
  const entries = await api("GET", `/feedback/${encodeURIComponent($("feedback-app").value)}?environment=${$("feedback-environment").value}`);
  fill($("feedback").tBodies[0], entries.map((f) => el("tr", {}, el("td", {}, el("code", {}, f.token)), el("td", {}, when(f.removedAt)))));
}
$("feedback-form").addEventListener("submit", (event) => { event.preventDefault(); loadFeedback(); });

// --- Live ----------------------------------------------------------------------------------------

let events = null;
const samples = [];  // the last 120 samples, one a second: { t, raw, and a Map(series -> value) per chart }
const colors = ["#0a66d8", "#1a7f37", "#c4271d", "#b25e00", "#7d3cbd", "#0f8b8d", "#6e6e73", "#d63384"];

// One Prometheus text sample per line: name{labels} value.
function parseMetrics(text) {
  const values = new Map();
  for (const line of text.split("\n")) {
    const match = line.match(/^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)$/);
    if (match) values.set(match[1] + (match[2] || ""), Number(match[3]));
  }
  return values;
}

function label(key, name) {
  const match = key.match(new RegExp(`${name}="([^"]*)"`));
  return match ? match[1] : "";
}

function rate(series, now, before, seconds) {
  const out = new Map();
  for (const [key, value] of now) if (series(key)) out.set(key, Math.max(0, (value - (before.get(key) ?? value)) / seconds));
  return out;
}

function sample(values) {
  const t = Date.now();
  const previous = samples[samples.length - 1];
  const seconds = previous ? Math.max(0.001, (t - previous.t) / 1000) : 1;
  const before = previous ? previous.raw : values;
  const requests = new Map();
  for (const [key, r] of rate((k) => k.startsWith("herald_provider_requests_total{"), values, before, seconds)) {
    const name = `${label(key, "status")} ${label(key, "reason")}`.trim();
    requests.set(name, (requests.get(name) || 0) + r);
  }
  const deliveries = new Map();
  for (const [key, r] of rate((k) => k.startsWith("herald_deliveries_total{") || k.startsWith("herald_pushes_stored_total") || k.startsWith("herald_pushes_discarded_total"), values, before, seconds)) {
    const name = key.startsWith("herald_deliveries_total") ? `delivered, ${label(key, "result")}` : key.startsWith("herald_pushes_stored") ? "stored" : "discarded";
    deliveries.set(name, r);
  }
  const gauges = new Map([["devices online", values.get("herald_devices_online") ?? 0], ["stored now", values.get("herald_stored_pushes") ?? 0]]);
  samples.push({ t, raw: values, requests, deliveries, gauges, latency: percentiles(values, before) });
  if (samples.length > 120) samples.shift();
  draw("requests", (h) => h.requests);
  draw("deliveries", (h) => h.deliveries);
  draw("gauges", (h) => h.gauges);
  draw("latency", (h) => h.latency);
  totals(values);
}

// p50, p90, p99 of the answers in the last interval, from the duration histogram's buckets.
function percentiles(values, before) {
  const buckets = [];
  for (const [key, value] of values) {
    if (!key.startsWith("herald_provider_request_duration_seconds_bucket{")) continue;
    const le = label(key, "le");
    buckets.push([le === "+Inf" ? Infinity : Number(le), value - (before.get(key) ?? value)]);
  }
  buckets.sort((a, b) => a[0] - b[0]);
  const total = buckets.length ? buckets[buckets.length - 1][1] : 0;
  const out = new Map();
  for (const p of [50, 90, 99]) {
    let v = 0;
    if (total > 0) {
      const found = buckets.find(([, count]) => count >= (total * p) / 100);
      v = found && Number.isFinite(found[0]) ? found[0] * 1000 : (buckets[buckets.length - 2]?.[0] ?? 0) * 1000;
    }
    out.set(`p${p}`, v);
  }
  return out;
}

function draw(name, pick) {
  const canvas = $(`chart-${name}`);
  const g = canvas.getContext("2d");
  const names = [...new Set(samples.flatMap((h) => [...pick(h).keys()]))].filter((n) => samples.some((h) => (pick(h).get(n) || 0) > 0) || name === "gauges" || name === "latency");
  const max = Math.max(1, ...samples.flatMap((h) => [...pick(h).values()]));
  g.clearRect(0, 0, canvas.width, canvas.height);
  g.strokeStyle = "#e5e5ea";
  g.fillStyle = "#6e6e73";
  g.font = "11px sans-serif";
  g.beginPath(); g.moveTo(0, 10.5); g.lineTo(canvas.width, 10.5); g.stroke();
  g.fillText(max.toFixed(max < 10 ? 1 : 0), 2, 22);
  names.forEach((series, i) => {
    g.strokeStyle = colors[i % colors.length];
    g.lineWidth = 2;
    g.beginPath();
    // The newest sample at the right edge, two minutes across.
    samples.forEach((h, x) => {
      const px = canvas.width - ((samples.length - 1 - x) / 119) * canvas.width;
      const py = canvas.height - 4 - ((pick(h).get(series) || 0) / max) * (canvas.height - 20);
      if (x === 0) g.moveTo(px, py); else g.lineTo(px, py);
    });
    g.stroke();
  });
  const last = samples[samples.length - 1];
  $(`legend-${name}`).replaceChildren(...names.map((series, i) => el("li", { "data-series": series },
    el("i", { style: `background:${colors[i % colors.length]}` }), `${series}: ${(pick(last).get(series) || 0).toFixed(name === "gauges" ? 0 : 1)}`)));
}

function totals(values) {
  const rows = [];
  for (const [key, value] of values) {
    if (key.startsWith("herald_provider_requests_total{") && value > 0) {
      rows.push([`${label(key, "status")} ${label(key, "reason")}`.trim(), value]);
    }
  }
  rows.sort((a, b) => b[1] - a[1]);
  fill($("totals").tBodies[0], rows.map(([answer, count]) => el("tr", { "data-answer": answer }, el("td", {}, answer), el("td", {}, count))));
}

function listen() {
  if (events) events.close();
  events = new EventSource("/console/events");
  // The header's indicator: what streams, and red (with why) from the moment the stream drops.
  events.addEventListener("metrics", (event) => {
    $("live-status").textContent = "● live: the gateway's counters, every second";
    $("live-status").className = "live ok";
    sample(parseMetrics(event.data));
  });
  events.onerror = () => {
    $("live-status").textContent = "● not live: the counters' stream dropped; reconnecting…";
    $("live-status").className = "live fail";
  };
}

// --- Start ---------------------------------------------------------------------------------------

async function start() {
  settings = await api("GET", "/console/settings");
  options($("push-type"), [["", "(none: inferred)"], ...settings.pushTypes.map((t) => [t.name, t.name])]);
  options($("fault-reason"), [["", "(none: only the delay)"], ...settings.reasons.map((r) => [r.name, `${r.status} ${r.name}`])]);
  await loadDirectory();
  $("signin").hidden = true;
  $("app").hidden = false;
  if (!$("payload").value) applyTemplate();
  listen();
  show("send");
}

// A sign-in link carries the token in its fragment, which never reaches a server or a log; it is
// taken off the address at once.
function signInFromLink() {
  const match = location.hash.match(/token=([^&]+)/);
  if (!match) return false;
  history.replaceState(null, "", location.pathname);
  signIn(decodeURIComponent(match[1]));
  return true;
}

window.addEventListener("hashchange", signInFromLink);

(async () => {
  if (signInFromLink()) return;
  try {
    const session = await api("GET", "/console/session");
    csrf = session.csrf;
    await start();
  } catch (_) {
    showSignIn();
  }
})();
