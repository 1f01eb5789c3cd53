// The web device: renders what the daemon says the screen shows (GET /screen) and follows the
// device's log live (GET /events, Server-Sent Events). Every tap goes through the device API, so the
// engine decides what happens, exactly as for `herald respond`. No framework, no build step.
"use strict";

const $ = (id) => document.getElementById(id);
const DEFAULT = "com.apple.UNNotificationDefaultActionIdentifier";
const DISMISS = "com.apple.UNNotificationDismissActionIdentifier";
// The screen is read again at most this often, however fast the log runs (a provider may send
// thousands of pushes a second): what arrives meanwhile is handled together.
const REFRESH_GAP = 150;
// A lit lock screen goes dark again after this long without a touch.
const SLEEP_AFTER = 10000;
let screen = null;
let bannerTimer = null;
let sleepTimer = null;
let view = "auto"; // "auto" (lock, home or app from the device's state), "center" or "settings"
let settingsApp = null; // null: the list; "summary": Scheduled Summary; else an app's bundle id
let summarySettings = null; // GET /summary's settings, read when Settings opens
let summaryError = "";
let passcodeFor = null; // what the passcode sheet asks for: {n, action, text}
const alerts = []; // alerts waiting to be shown, oldest first
const expanded = new Set(); // cards, stacks and summaries the user opened, kept across renders
const quietChoices = new Map(); // a quiet notification's Keep… or Turn Off… being answered
// What played, for people reading the page and for tests: {app, identifier, sound, played, note}.
window.heraldSounds = [];
// The log entries the page has handled, oldest first (the last 500): {kind, app, identifier}.
window.heraldEvents = [];

const palette = ["#ff9500", "#34c759", "#007aff", "#af52de", "#ff2d55", "#5ac8fa", "#ffcc00", "#5856d6"];

function colour(bundleID) {
  let hash = 0;
  for (const c of bundleID) hash = (hash * 31 + c.charCodeAt(0)) >>> 0;
  return palette[hash % palette.length];
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function button(text, className, onClick) {
  const node = element("button", className, text);
  node.type = "button";
  node.addEventListener("click", (event) => {
    event.stopPropagation();
    onClick(event);
  });
  return node;
}

function miniIcon(app, name) {
  const icon = element("span", "mini-icon", name.charAt(0));
  icon.style.background = colour(app);
  return icon;
}

// A failed call: the status, and the daemon's message.
class APIError extends Error {
  constructor(method, path, status, body) {
    let message = body;
    try { message = JSON.parse(body).error.message || body; } catch (_) { /* not JSON */ }
    super(`${method} ${path}: ${status} ${message}`);
    this.status = status;
    this.reason = message;
  }
}

async function api(method, path, body) {
  const response = await fetch(path, {
    method, headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store",
  });
  const text = await response.text();
  if (!response.ok) throw new APIError(method, path, response.status, text);
  return text ? JSON.parse(text) : null;
}

function appName(bundleID) {
  return (screen.apps.find((a) => a.bundleID === bundleID) || { name: bundleID }).name;
}

function localTime(date) {
  return new Date(date).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", timeZone: screen.timeZone });
}

function relativeTime(date) {
  const seconds = Math.max(0, Math.round((new Date(screen.now) - new Date(date)) / 1000));
  if (seconds < 60) return "now";
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86400)}d ago`;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// MARK: - Reading the screen: at most every REFRESH_GAP ms

let fetching = null; // the read in flight
let nextRead = null; // the read that starts after it, shared by everyone who asks meanwhile
let lastRead = 0;
// For people reading the page and for tests: no read of the screen in flight or waiting, so what is
// drawn is the device as it was after the last change the page made.
window.heraldSettled = () => fetching === null && nextRead === null;
let lastScreen = null; // the last read's text

// Reads GET /screen and renders it. The read starts after the call (so it sees what happened
// before), but never sooner than REFRESH_GAP after the last one: callers in between share it.
function refresh() {
  if (nextRead) return nextRead;
  const read = (async () => {
    await null; // `nextRead` is this read from here on
    if (fetching) await fetching.catch(() => {});
    const wait = lastRead + REFRESH_GAP - Date.now();
    if (wait > 0) await sleep(wait);
    // Whoever asks from now on needs a read that starts after this one.
    if (nextRead === read) nextRead = null;
    lastRead = Date.now();
    const mine = fetch("/screen", { cache: "no-store" }).then(async (response) => {
      const text = await response.text();
      if (!response.ok) throw new APIError("GET", "/screen", response.status, text);
      return text;
    });
    fetching = mine;
    let text;
    try {
      text = await mine;
    } finally {
      if (fetching === mine) fetching = null;
    }
    // Drawn again only when something changed (what the user opens is drawn at once, elsewhere).
    if (text === lastScreen) return;
    lastScreen = text;
    screen = JSON.parse(text);
    render();
  })();
  nextRead = read;
  return read;
}

// MARK: - Awake or asleep (locked)

function setAwake(awake) {
  clearTimeout(sleepTimer);
  document.body.dataset.awake = awake ? "yes" : "no";
  if (awake && screen && screen.locked) {
    sleepTimer = setTimeout(() => {
      if (screen.locked && $("passcode-layer").classList.contains("hidden")) setAwake(false);
      else setAwake(true);
    }, SLEEP_AFTER);
  }
}

// MARK: - Responding (the engine's response path: POST /apps/<app>/delivered/<id>/respond)

async function respond(n, action, text, passcode, options = {}) {
  const body = { action: action === DEFAULT ? "default" : action === DISMISS ? "dismiss" : action };
  if (text !== undefined) body.text = text;
  if (passcode !== undefined) body.passcode = passcode;
  await api("POST", `/apps/${encodeURIComponent(n.app)}/delivered/${encodeURIComponent(n.identifier)}/respond`, body);
  // Opening the notification (or a foreground action) brings its app to the front.
  const foreground = action === DEFAULT || (n.actions || []).some((a) => a.identifier === action && a.foreground);
  if (foreground) view = "auto";
  if (options.refresh !== false) await refresh();
}

// On the lock screen, opening the app or an action that needs authentication or the foreground
// needs the passcode (Face ID stands for the slider, not for this).
function needsPasscode(action) {
  return screen.locked && (action === null || action.authenticationRequired || action.foreground);
}

async function act(n, action, text) {
  if (action === null && n.opensApp === false) return; // hasAction NO: nothing to open
  if (needsPasscode(action)) {
    askPasscode(n, action, text);
    return;
  }
  try {
    await respond(n, action ? action.identifier : DEFAULT, text);
  } catch (error) {
    // The engine decides: if it wants the passcode after all, ask for it.
    if (error.status === 403 && /passcode/i.test(error.reason)) askPasscode(n, action, text);
    else console.error(error);
  }
}

// MARK: - The passcode sheet

function askPasscode(n, action, text) {
  passcodeFor = { n, action, text };
  setAwake(true);
  $("passcode").dataset.app = n.app;
  $("passcode").dataset.identifier = n.identifier;
  $("passcode").dataset.action = action ? action.identifier : "default";
  $("passcode-reason").textContent = action ? `to ${action.title}` : `to open ${n.appName}`;
  $("passcode-input").value = "";
  $("passcode-error").classList.add("hidden");
  $("passcode-layer").classList.remove("hidden");
  $("passcode-input").focus();
}

function closePasscode() {
  passcodeFor = null;
  $("passcode-layer").classList.add("hidden");
  $("passcode-input").value = "";
  setAwake(true);
}

async function submitPasscode() {
  const code = $("passcode-input").value;
  if (!passcodeFor || code === "") return;
  const { n, action, text } = passcodeFor;
  try {
    await respond(n, action ? action.identifier : DEFAULT, text, code);
    closePasscode();
  } catch (error) {
    const wrong = error.status === 403 && /wrong passcode/i.test(error.reason);
    $("passcode-error").textContent = wrong ? "Wrong Passcode" : error.reason || error.message;
    $("passcode-error").classList.remove("hidden");
    $("passcode-input").value = "";
    const form = $("passcode");
    form.classList.remove("shake");
    void form.offsetWidth; // restart the animation
    form.classList.add("shake");
    if (!wrong && error.status !== 403) closePasscode(); // gone meanwhile: nothing to run
  }
}

function buildKeypad() {
  const keys = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "0", "⌫"].map((key) => {
    const node = button(key, key === "0" ? "key zero" : "key", () => {
      const input = $("passcode-input");
      input.value = key === "⌫" ? input.value.slice(0, -1) : input.value + key;
    });
    node.dataset.key = key === "⌫" ? "delete" : key;
    if (key === "⌫") node.setAttribute("aria-label", "delete");
    return node;
  });
  $("passcode-keys").replaceChildren(...keys);
}

// MARK: - Provisional: Keep… and Turn Off…

async function provisional(app, choice) {
  await api("POST", `/apps/${encodeURIComponent(app)}/provisional`, { choice });
  for (const key of [...quietChoices.keys()]) if (key.startsWith(`${app}\u0000`)) quietChoices.delete(key);
  await refresh();
}

function quietButtons(n) {
  const key = `${n.app}\u0000${n.identifier}`;
  const box = element("div", "quiet-buttons");
  box.addEventListener("click", (event) => event.stopPropagation());
  const choice = (text, value, className) => {
    const node = button(text, className || "choice", () => provisional(n.app, value));
    node.dataset.choice = value;
    return node;
  };
  const cancel = () => button("Cancel", "cancel", () => { quietChoices.delete(key); show(); });
  const show = () => {
    const step = quietChoices.get(key);
    if (step === "keep") {
      box.replaceChildren(choice("Deliver Prominently", "prominently"), choice("Deliver Quietly", "quietly"), cancel());
    } else if (step === "off") {
      box.replaceChildren(choice("Turn Off All Notifications", "off", "choice destructive"), cancel());
    } else {
      box.replaceChildren(
        button("Keep…", "keep", () => { quietChoices.set(key, "keep"); show(); }),
        button("Turn Off…", "turn-off destructive", () => { quietChoices.set(key, "off"); show(); }));
    }
  };
  show();
  return box;
}

// MARK: - Cards

function actionButtons(n, actions) {
  const box = element("div", "card-actions");
  for (const action of actions) {
    if (isTextInput(action)) {
      box.append(button(action.title, "action", () => showReply(box, n, action)));
    } else {
      const node = button(action.title, action.destructive ? "action destructive" : "action", () => act(n, action));
      node.dataset.action = action.identifier;
      box.append(node);
    }
  }
  return box;
}

function isTextInput(action) {
  return action.textInputButtonTitle !== null && action.textInputButtonTitle !== undefined;
}

// A text-input action's field and send button (the category's placeholder and button title);
// `send` gets the typed text.
function replyForm(action, send) {
  const form = element("form", "reply");
  form.dataset.action = action.identifier;
  const input = element("input");
  input.placeholder = action.textInputPlaceholder || action.title;
  input.name = "reply";
  const submit = element("button", null, action.textInputButtonTitle || "Send");
  submit.type = "submit";
  form.append(input, submit);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    send(input.value);
  });
  form.addEventListener("click", (event) => event.stopPropagation());
  return form;
}

function showReply(box, n, action) {
  const form = replyForm(action, (text) => act(n, action, text));
  box.replaceChildren(form);
  form.querySelector("input").focus();
}

// A notification as the screen lists it, with its actions: Notification Center's stacks and the
// summaries carry fewer fields than the screen's list, which has them all.
function full(n) {
  return screen.notifications.find((m) => m.app === n.app && m.identifier === n.identifier)
    || { actions: [], minimalActions: [], alertAction: "", launchImageName: "", ...n };
}

// A notification as a card. `actions`: the context's actions, shown when the card is expanded.
// options: place (where it is, for remembering it open), foot (the lock screen's slider text),
// clearable (×), quiet (Keep… and Turn Off… when delivered quietly).
function card(n, actions, options = {}) {
  const node = element("article", "card");
  node.dataset.app = n.app;
  node.dataset.identifier = n.identifier;
  if (n.level) node.classList.add(`level-${n.level}`);
  if (n.silencedBy) node.classList.add("silenced");
  if (n.quiet) node.classList.add("quiet");
  if (n.opensApp === false) node.classList.add("no-action");
  const key = options.place ? `${options.place}\u0000${n.app}\u0000${n.identifier}` : null;
  const head = element("div", "card-head");
  head.append(miniIcon(n.app, n.appName), element("span", "card-app", n.appName));
  if (n.level === "critical") head.append(element("span", "card-label critical", "Critical"));
  else if (n.timeSensitive) head.append(element("span", "card-label time-sensitive", "Time Sensitive"));
  head.append(element("span", "card-time", relativeTime(n.date)));
  if (actions.length > 0) {
    head.append(button("⌄", "expand", () => {
      node.classList.toggle("expanded");
      if (key) node.classList.contains("expanded") ? expanded.add(key) : expanded.delete(key);
    }));
  }
  if (options.clearable) {
    const clear = button("×", "card-close", () => respond(n, DISMISS));
    clear.title = "Clear";
    head.append(clear);
  }
  node.append(head);
  if (n.title) node.append(element("div", "card-title", n.title));
  if (n.subtitle) node.append(element("div", "card-subtitle", n.subtitle));
  if (n.body) node.append(element("div", "card-body", n.body));
  if (n.silencedBy) node.append(element("div", "card-silenced", `Silenced by ${n.silencedBy}`));
  if (options.foot) {
    const foot = [n.alertAction];
    if (n.launchImageName) foot.push(`launch image ${n.launchImageName}`);
    node.append(element("div", "card-foot", foot.filter(Boolean).join(" · ")));
  }
  if (options.quiet && n.quiet) {
    node.append(element("div", "quiet-note", "Delivered Quietly"), quietButtons(n));
  }
  if (actions.length > 0) {
    node.append(actionButtons(n, actions));
    if (options.expanded || (key && expanded.has(key))) node.classList.add("expanded");
  }
  // Tapping the notification opens it: the default action (not for hasAction NO).
  node.addEventListener("click", () => act(n, null));
  return node;
}

// A Scheduled Summary: its title, how many, the top items; expanded, each notification, which opens
// as itself.
function summaryCard(s, place) {
  const node = element("article", "summary-card");
  node.dataset.summary = s.id;
  const key = `${place}\u0000summary\u0000${s.id}`;
  if (expanded.has(key)) node.classList.add("expanded");
  const head = element("div", "summary-head");
  const count = s.notifications.length;
  head.append(element("span", "summary-title", s.title),
    element("span", "summary-count", `${count} notification${count === 1 ? "" : "s"} · ${localTime(s.date)}`));
  const items = element("div", "summary-items");
  for (const n of s.notifications.slice(0, 3)) {
    const item = element("div", "summary-item");
    item.dataset.identifier = n.identifier;
    const text = element("span", "summary-text");
    text.append(element("b", null, n.title || n.appName), document.createTextNode(n.body ? ` ${n.body}` : ""));
    item.append(miniIcon(n.app, n.appName), text);
    items.append(item);
  }
  const all = element("div", "summary-all");
  all.append(...s.notifications.map((n) => card(full(n), full(n).actions, { place: "summary", clearable: place === "center" })));
  const toggle = button(count > 3 ? `Show all ${count}` : "Show all", "summary-toggle", () => {
    node.classList.toggle("expanded");
    node.classList.contains("expanded") ? expanded.add(key) : expanded.delete(key);
    toggle.textContent = node.classList.contains("expanded") ? "Show less" : count > 3 ? `Show all ${count}` : "Show all";
  });
  if (node.classList.contains("expanded")) toggle.textContent = "Show less";
  node.append(head, items, all, toggle);
  // Tapping the card opens it; its notifications open as themselves.
  node.addEventListener("click", () => { if (!node.classList.contains("expanded")) toggle.click(); });
  return node;
}

// A Live Activity's card: the app, the attributes, the changing state as its fields, and whether it
// is stale or ended.
function activityCard(a) {
  const node = element("article", `activity-card ${a.activityState}`);
  node.dataset.app = a.app;
  node.dataset.activity = a.id;
  node.dataset.state = a.activityState;
  const head = element("div", "card-head");
  head.append(miniIcon(a.app, a.appName), element("span", "card-app", a.appName));
  if (a.activityState !== "active") head.append(element("span", "activity-badge", a.activityState));
  node.append(head);
  const fields = (value) => Object.entries(value || {}).map(([key, v]) => `${key} ${typeof v === "object" ? JSON.stringify(v) : v}`);
  node.append(element("div", "activity-attributes", fields(a.attributes).join(" · ") || a.attributesType));
  node.append(element("div", "activity-state", fields(a.state).join(" · ")));
  if (a.activityState === "ended" && a.dismissAt) {
    const minutes = Math.max(0, Math.ceil((new Date(a.dismissAt) - new Date(screen.now)) / 60000));
    node.append(element("div", "card-foot", `leaves the screen in ${minutes < 60 ? `${minutes}m` : `${Math.round(minutes / 60)}h`}`));
  }
  return node;
}

// MARK: - Screens

// A part of the screen is built again only when what it shows changed: an element a person is
// pressing is not replaced under their finger by a read that changed something elsewhere.
const drawnKeys = new WeakMap();
// `timed`: it shows how long ago (to the minute), so a new minute draws it again.
function draw(container, data, build, timed = true) {
  const minute = timed ? Math.floor(Date.parse(screen.now) / 60000) : null;
  const key = JSON.stringify([data, minute, screen.timeZone, [...expanded].sort(), [...quietChoices]]);
  if (drawnKeys.get(container) === key) return false;
  drawnKeys.set(container, key);
  return place(container, build());
}

// Puts `nodes` in `container`, unless what is there already looks the same: then the elements on
// the screen stay (with their listeners) and only take the new state of their controls.
function place(container, nodes) {
  const fresh = document.createElement("div");
  fresh.append(...nodes);
  if (fresh.innerHTML !== container.innerHTML) {
    container.replaceChildren(...fresh.childNodes);
    return true;
  }
  const shown = container.querySelectorAll("input");
  fresh.querySelectorAll("input").forEach((input, index) => {
    const target = shown[index];
    if (input.type === "checkbox" || input.type === "radio") target.checked = input.checked;
    else if (document.activeElement !== target) target.value = input.value;
  });
  return false;
}

function renderClock() {
  const now = new Date(screen.now);
  const zone = { timeZone: screen.timeZone };
  const time = now.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", ...zone });
  $("status-time").textContent = time;
  $("lock-time").textContent = time;
  $("lock-date").textContent = now.toLocaleDateString([], { weekday: "long", month: "long", day: "numeric", ...zone });
}

function renderFocus() {
  const focus = screen.focus || null;
  const pill = $("lock-focus");
  pill.textContent = focus ? focus.name : "Focus";
  pill.classList.toggle("on", !!focus);
  pill.dataset.focus = focus ? focus.identifier : "";
  pill.title = focus ? (focus.until ? `${focus.name} until ${localTime(focus.until)}` : `${focus.name} is on`) : "Turn on a Focus";
  $("status-focus").textContent = focus ? focus.name : "";
  $("status-focus").classList.toggle("hidden", !focus);
  $("center-focus").textContent = focus
    ? `${focus.name} is on${focus.until ? ` until ${localTime(focus.until)}` : ""}: notifications are silenced`
    : "";
  $("center-focus").classList.toggle("hidden", !focus);
  document.body.dataset.focus = focus ? focus.identifier : "";
  draw($("focus-modes"), [focus, screen.focusModes], () => {
    const modes = (screen.focusModes || []).map((mode) => {
      const node = button(mode.name, "focus-mode", () => setFocus(mode.identifier));
      node.dataset.mode = mode.identifier;
      node.classList.toggle("on", !!focus && focus.identifier === mode.identifier);
      node.setAttribute("aria-pressed", node.classList.contains("on") ? "true" : "false");
      return node;
    });
    const off = button("Off", "focus-mode off", () => setFocus(null));
    off.dataset.mode = "";
    off.setAttribute("aria-pressed", focus ? "false" : "true");
    return [...modes, off];
  }, false);
}

async function setFocus(mode) {
  await api("PUT", "/focus", { mode });
  $("focus-layer").classList.add("hidden");
  await refresh();
}

// The lock screen's list: what belongs there (not silenced, quiet or summarised ones: those are in
// Notification Center, or inside their summary's card).
function onLockScreen(n) {
  return n.lockScreen !== false && !n.summaryID && !n.silencedBy && !n.quiet;
}

function renderLock() {
  const activities = screen.activities || [];
  draw($("lock-activities"), activities, () => activities.map(activityCard));
  const summaries = (screen.summaries || []).filter((s) => s.notifications.length > 0);
  draw($("lock-summaries"), [summaries, screen.notifications], () => summaries.map((s) => summaryCard(s, "lock")));
  const listed = screen.notifications.filter(onLockScreen);
  draw($("lock-notifications"), listed,
    () => listed.map((n) => card(n, n.minimalActions, { place: "lock", foot: true, clearable: true })));
}

function renderHome() {
  const shown = screen.apps.map((app) => [app.bundleID, app.name, app.badge]);
  draw($("app-grid"), shown, () => screen.apps.map((app) => {
    const node = button("", "app", () => api("POST", `/apps/${encodeURIComponent(app.bundleID)}/open`).then(refresh));
    node.dataset.app = app.bundleID;
    const icon = element("span", "icon", app.name.charAt(0));
    icon.style.background = colour(app.bundleID);
    if (app.badge > 0) icon.append(element("span", "badge", String(app.badge)));
    node.append(icon, element("span", "app-name", app.name));
    return node;
  }), false);
  $("no-apps").classList.toggle("hidden", shown.length > 0);
}

function renderFront() {
  if (!screen.foreground) return;
  const front = screen.apps.find((a) => a.bundleID === screen.foreground);
  $("front-name").textContent = front ? front.name : screen.foreground;
  $("front-icon").textContent = (front ? front.name : "?").charAt(0);
  $("front-icon").style.background = colour(screen.foreground);
  $("front-told").textContent = screen.foregroundTold || "";
  $("app-screen").dataset.app = screen.foreground;
}

// Notification Center: the summaries, then the stacks (by app and thread, or as the app's grouping
// setting says), newest first. A stack shows its top card and its line; tapped, all of it.
function renderCenter() {
  const summaries = (screen.summaries || []).filter((s) => s.notifications.length > 0);
  draw($("center-summaries"), [summaries, screen.notifications], () => summaries.map((s) => summaryCard(s, "center")));
  const stacks = screen.stacks || [];
  draw($("center-groups"), [stacks, screen.notifications], () => stacks.map((stack) => {
    const group = element("section", "group stack");
    group.dataset.app = stack.app;
    group.dataset.thread = stack.thread;
    group.dataset.count = String(stack.count);
    const key = `stack\u0000${stack.app}\u0000${stack.thread}`;
    if (expanded.has(key)) group.classList.add("expanded");
    const head = element("div", "group-head");
    const label = stack.thread ? `${stack.appName} · ${stack.thread}` : stack.appName;
    head.append(element("span", null, label), element("span", "group-count", `${stack.count}`));
    const cards = stack.notifications.map((c) => {
      const n = full(c);
      return card(n, n.actions, { place: "center", clearable: true, quiet: true });
    });
    group.append(head, cards[0]);
    if (cards.length > 1) {
      const more = element("div", "stack-more");
      const less = button("Show less", "text-button stack-less", () => { group.classList.remove("expanded"); expanded.delete(key); });
      more.append(...cards.slice(1), less);
      const line = button(stack.line || `and ${stack.count - 1} more`, "stack-line", () => {
        group.classList.add("expanded");
        expanded.add(key);
      });
      group.append(line, more);
    }
    return group;
  }));
  const held = screen.held || 0;
  $("center-held").textContent = held > 0
    ? `${held} notification${held === 1 ? "" : "s"} waiting for the Scheduled Summary${screen.nextSummary ? ` at ${localTime(screen.nextSummary)}` : ""}`
    : "";
  $("center-held").classList.toggle("hidden", held === 0);
  $("center-empty").classList.toggle("hidden", stacks.length + summaries.length > 0);
}

function settingRow(label, control) {
  const row = element("label", "settings-row");
  row.append(element("span", "grow", label), control);
  return row;
}

function toggle(name, on, disabled) {
  const input = element("input", "switch");
  input.type = "checkbox";
  input.name = name;
  input.checked = on;
  input.disabled = disabled;
  return input;
}

function segments(name, choices, value, disabled) {
  const box = element("div", "segments");
  for (const [choice, label] of choices) {
    const option = element("label", null);
    const input = element("input");
    input.type = "radio";
    input.name = name;
    input.value = choice;
    input.checked = choice === value;
    input.disabled = disabled;
    option.append(input, document.createTextNode(label));
    box.append(option);
  }
  return box;
}

const settingNames = {
  soundSetting: "Sounds", badgeSetting: "Badges", lockScreenSetting: "Lock Screen",
  notificationCenterSetting: "Notification Center",
};

function allowed(settings) {
  return ["authorized", "provisional", "ephemeral"].includes(settings.authorizationStatus);
}

// What the app list says of an app's settings: "Off", or what it may do.
function summary(settings) {
  if (!allowed(settings)) return "Off";
  const on = [];
  if (settings.alertStyle !== "none") on.push(settings.alertStyle === "alert" ? "Alerts" : "Banners");
  if (settings.soundSetting === "enabled") on.push("Sounds");
  if (settings.badgeSetting === "enabled") on.push("Badges");
  return on.join(", ") || "Deliver Quietly";
}

async function loadSummarySettings() {
  try {
    summarySettings = (await api("GET", "/summary")).settings;
  } catch (error) {
    console.error(error);
  }
}

// Settings are not redrawn under the user's typing: a time being typed is kept until it is entered.
let editingSummary = false;
function typingIn(form) {
  return form.id === "settings-summary" && editingSummary && !form.classList.contains("hidden");
}

let settingsKey = null;

// The summary's line in the list: its times, or Off.
function summaryDetail() {
  const detail = $("settings-apps").querySelector('[data-section="summary"] .detail');
  if (!detail) return;
  detail.textContent = summarySettings ? (summarySettings.enabled ? summarySettings.times.join(", ") : "Off") : "";
}

function renderSettings() {
  const apps = screen.apps.map((a) => [a.bundleID, a.name, a.settings]);
  const key = JSON.stringify(settingsApp === null ? [null, apps]
    : settingsApp === "summary" ? ["summary", apps, summarySettings, summaryError, screen.nextSummary, screen.held]
      : [settingsApp, apps.find((a) => a[0] === settingsApp), summarySettings]);
  if (key === settingsKey) {
    summaryDetail();
    return;
  }
  settingsKey = key;
  const list = settingsApp === null;
  $("settings-back").classList.toggle("hidden", list);
  $("settings-apps").classList.toggle("hidden", !list);
  $("settings-app").classList.toggle("hidden", list || settingsApp === "summary");
  $("settings-summary").classList.toggle("hidden", settingsApp !== "summary");
  if (list) {
    $("settings-title").textContent = "Notifications";
    const scheduled = button("", "settings-row", () => { settingsApp = "summary"; renderSettings(); });
    scheduled.dataset.section = "summary";
    scheduled.append(element("span", "grow", "Scheduled Summary"), element("span", "detail"));
    const rows = screen.apps.map((app) => {
      const row = button("", "settings-row", () => { settingsApp = app.bundleID; renderSettings(); });
      row.dataset.app = app.bundleID;
      const icon = miniIcon(app.bundleID, app.name);
      icon.style.cssText += ";width:28px;height:28px;border-radius:7px";
      row.append(icon, element("span", "grow", app.name), element("span", "detail", summary(app.settings)));
      return row;
    });
    place($("settings-apps"), [scheduled, element("div", "settings-caption", "Apps"), ...rows]);
    summaryDetail();
    return;
  }
  if (settingsApp === "summary") {
    renderSummarySettings();
    return;
  }
  const app = screen.apps.find((a) => a.bundleID === settingsApp);
  if (!app) { settingsApp = null; settingsKey = null; renderSettings(); return; }
  $("settings-title").textContent = app.name;
  const s = app.settings;
  const on = allowed(s);
  const form = $("settings-app");
  form.dataset.app = app.bundleID;
  form.dataset.status = s.authorizationStatus;
  const main = element("div", "settings-group");
  main.append(settingRow("Allow Notifications", toggle("allow", on, false)));
  const parts = [main];
  if (s.authorizationStatus === "provisional") {
    parts.push(element("div", "settings-note", "Delivered Quietly: Notification Center only, until you choose Keep or Turn Off."));
  }
  const inSummary = !!summarySettings && summarySettings.apps.includes(app.bundleID);
  const timeSensitive = element("div", "settings-group");
  timeSensitive.append(
    settingRow("Time Sensitive Notifications", toggle("timeSensitiveSetting", s.timeSensitiveSetting === "enabled",
      !on || s.timeSensitiveSetting === "notSupported")),
    settingRow("Scheduled Summary", toggle("inSummary", inSummary, !on || !summarySettings)));
  const alerts = element("div", "settings-group");
  alerts.append(settingRow("Alert Style",
    segments("alertStyle", [["none", "None"], ["banner", "Banner"], ["alert", "Alert"]], s.alertStyle, !on)));
  for (const key of ["lockScreenSetting", "notificationCenterSetting", "soundSetting", "badgeSetting"]) {
    alerts.append(settingRow(settingNames[key], toggle(key, s[key] === "enabled", !on || s[key] === "notSupported")));
  }
  const previews = element("div", "settings-group");
  previews.append(settingRow("Show Previews", segments("showPreviewsSetting",
    [["always", "Always"], ["whenAuthenticated", "Unlocked"], ["never", "Never"]], s.showPreviewsSetting, !on)));
  previews.append(settingRow("Notification Grouping", segments("groupingSetting",
    [["automatic", "Automatic"], ["byApp", "By App"], ["off", "Off"]], s.groupingSetting || "automatic", !on)));
  place(form, [...parts, timeSensitive, element("div", "settings-caption", "Alerts"), alerts, previews]);
}

const ordinals = ["1st", "2nd", "3rd", "4th", "5th", "6th", "7th", "8th", "9th", "10th", "11th", "12th"];

// Scheduled Summary: on or off, its times, the apps in it (PATCH /summary).
function renderSummarySettings() {
  $("settings-title").textContent = "Scheduled Summary";
  const form = $("settings-summary");
  if (typingIn(form)) {
    settingsKey = null; // drawn when the time has been entered
    return;
  }
  const s = summarySettings || { enabled: false, times: [], apps: [] };
  const main = element("div", "settings-group");
  main.append(settingRow("Scheduled Summary", toggle("enabled", s.enabled, !summarySettings)));
  const note = element("div", "settings-note",
    "Get your notifications bundled and delivered on a schedule. Time Sensitive notifications are delivered immediately.");
  const times = element("div", "settings-group");
  s.times.forEach((time, index) => {
    const field = element("input", "time-field");
    field.type = "text";
    field.name = "time";
    field.value = time;
    field.placeholder = "HH:MM";
    field.inputMode = "numeric";
    field.dataset.index = String(index);
    field.addEventListener("input", () => { editingSummary = true; });
    field.addEventListener("keydown", (event) => {
      if (event.key === "Enter") { event.preventDefault(); field.blur(); }
    });
    const row = settingRow(`${ordinals[index] || `${index + 1}th`} Summary`, field);
    if (s.times.length > 1) {
      const remove = button("⊖", "remove-time", () => patchSummary({ times: s.times.filter((_, i) => i !== index) }));
      remove.title = "Remove";
      row.append(remove);
    }
    times.append(row);
  });
  const add = button("Add Summary", "settings-row add", () => {
    const used = new Set(s.times);
    const time = ["18:00", "08:00", "12:00", "21:00", "06:00"].find((t) => !used.has(t)) || "20:00";
    patchSummary({ times: [...s.times, time] });
  });
  add.dataset.add = "time";
  times.append(add);
  const apps = element("div", "settings-group");
  for (const app of screen.apps) {
    const input = toggle("app", s.apps.includes(app.bundleID), !summarySettings);
    input.value = app.bundleID;
    const row = settingRow(app.name, input);
    row.dataset.app = app.bundleID;
    apps.append(row);
  }
  const parts = [main, note, element("div", "settings-caption", "Schedule"), times,
    element("div", "settings-caption", "Apps in Summary"), apps];
  if (s.enabled && screen.nextSummary) {
    const held = screen.held || 0;
    parts.push(element("div", "settings-note",
      `Next summary at ${localTime(screen.nextSummary)}${held ? `, with ${held} notification${held === 1 ? "" : "s"}` : ""}.`));
  }
  if (summaryError) parts.push(element("div", "settings-error", summaryError));
  place(form, parts);
}

async function patchSummary(patch) {
  try {
    summarySettings = (await api("PATCH", "/summary", patch)).settings;
    summaryError = "";
  } catch (error) {
    summaryError = error.reason || error.message;
  }
  await refresh();
  if (view === "settings") renderSettings();
}

// A change in the summary's form: the whole form as PATCH /summary.
function changeSummary(event) {
  if (event) event.preventDefault();
  editingSummary = false;
  const form = $("settings-summary");
  const enabled = form.querySelector("input[name='enabled']").checked;
  const times = [...form.querySelectorAll("input[name='time']")].map((input) => input.value.trim());
  const bad = times.find((t) => !/^\d{1,2}:\d{2}$/.test(t));
  if (bad !== undefined) {
    summaryError = `“${bad}” is not a time such as 08:00 or 18:30`;
    renderSummarySettings();
    return;
  }
  const apps = [...form.querySelectorAll("input[name='app']")].filter((i) => i.checked).map((i) => i.value);
  patchSummary({ enabled, times: times.map((t) => t.padStart(5, "0")).sort(), apps });
}

// A change in an app's form: the same as PATCH /apps/<app>/settings; it applies to the next notification.
async function changeSetting(event) {
  const input = event.target;
  const app = $("settings-app").dataset.app;
  if (input.name === "inSummary") {
    const apps = (summarySettings ? summarySettings.apps : []).filter((a) => a !== app);
    if (input.checked) apps.push(app);
    await patchSummary({ apps });
    return;
  }
  let patch;
  if (input.name === "allow") patch = { authorizationStatus: input.checked ? "authorized" : "denied" };
  else if (input.type === "radio") patch = { [input.name]: input.value };
  else patch = { [input.name]: input.checked ? "enabled" : "disabled" };
  await api("PATCH", `/apps/${encodeURIComponent(app)}/settings`, patch);
  await refresh();
}

function renderPrompt() {
  const prompt = screen.prompts[0];
  $("prompt-layer").classList.toggle("hidden", !prompt);
  if (!prompt) return;
  $("prompt").dataset.app = prompt.app;
  $("prompt-title").textContent = `“${prompt.appName}” Would Like to Send You Notifications`;
  const kinds = ["alert", "sound", "badge"].filter((o) => prompt.options.includes(o))
    .map((o) => ({ alert: "alerts", sound: "sounds", badge: "icon badges" })[o]);
  const list = kinds.length > 1 ? `${kinds.slice(0, -1).join(", ")}, and ${kinds[kinds.length - 1]}` : kinds[0] || "alerts";
  $("prompt-body").textContent = `Notifications may include ${list}. These can be configured in Settings.`;
}

function render() {
  const locked = screen.locked;
  if (locked) view = "auto";
  const shown = locked ? "lock" : view !== "auto" ? view : screen.foreground ? "app" : "home";
  for (const name of ["lock", "home", "app", "center", "settings"]) {
    $(`${name}-screen`).classList.toggle("hidden", name !== shown);
  }
  const wasLocked = document.body.dataset.locked === "yes";
  document.body.dataset.screen = shown;
  document.body.dataset.locked = locked ? "yes" : "no";
  if (!locked) {
    clearTimeout(sleepTimer);
    document.body.dataset.awake = "yes";
    if (!$("passcode-layer").classList.contains("hidden")) closePasscode();
  } else if (!wasLocked && document.body.dataset.awake === "yes") {
    setAwake(true); // start the timer that puts it to sleep
  }
  renderClock();
  renderFocus();
  renderLock();
  renderHome();
  renderFront();
  renderCenter();
  if (shown === "settings" && !typingIn($("settings-summary"))) renderSettings();
  renderPrompt();
}

// MARK: - Arrivals: banner, alert, sound, waking the screen

function notificationFor(entry) {
  return screen.notifications.find((n) => n.app === entry.app && n.identifier === entry.identifier) || {
    app: entry.app, appName: appName(entry.app), identifier: entry.identifier || "", title: entry.presentation.title,
    subtitle: entry.presentation.subtitle, body: entry.presentation.body, date: entry.date, alertAction: "",
    launchImageName: "", actions: [], minimalActions: [], threadIdentifier: "",
    level: entry.presentation.interruptionLevel, timeSensitive: entry.presentation.interruptionLevel === "time-sensitive",
    opensApp: entry.presentation.noAction !== true, actionTitle: entry.presentation.alertAction || null,
  };
}

function putBannerAway() {
  $("banner").classList.add("hidden");
}

function showBanner(n) {
  const node = card(n, n.minimalActions || [], {});
  node.addEventListener("click", putBannerAway);
  // The grabber puts the banner away (a swipe up): it stays in Notification Center.
  const grabber = button("", "grabber", putBannerAway);
  grabber.title = "Put away";
  $("banner").replaceChildren(node, grabber);
  $("banner").classList.remove("hidden");
  clearTimeout(bannerTimer);
  // A banner leaves after a few seconds, unless expanded; the notification stays in Notification Center.
  const leave = () => {
    if (node.classList.contains("expanded")) bannerTimer = setTimeout(leave, 5000);
    else putBannerAway();
  };
  bannerTimer = setTimeout(leave, 5000);
}

// A delivered summary, unlocked: a banner with its card; tapping it opens Notification Center.
function showSummaryBanner(entry) {
  const s = (screen.summaries || []).find((x) => x.id === entry.summary.id);
  if (!s || s.notifications.length === 0) return;
  const node = summaryCard(s, "banner");
  node.classList.add("summary-banner");
  node.addEventListener("click", () => { putBannerAway(); view = "center"; render(); }, true);
  $("banner").replaceChildren(node, button("", "grabber", putBannerAway));
  $("banner").classList.remove("hidden");
  clearTimeout(bannerTimer);
  bannerTimer = setTimeout(putBannerAway, 5000);
}

function showNextAlert() {
  if (!$("alert-layer").classList.contains("hidden") || alerts.length === 0) return;
  const n = alerts.shift();
  const panel = $("alert");
  panel.dataset.app = n.app;
  panel.dataset.identifier = n.identifier;
  const text = element("div", "alert-text");
  text.append(element("div", "alert-app", n.appName));
  if (n.timeSensitive) text.append(element("div", "card-label time-sensitive", "Time Sensitive"));
  if (n.title) text.append(element("h3", null, n.title));
  if (n.subtitle) text.append(element("p", "alert-subtitle", n.subtitle));
  if (n.body) text.append(element("p", null, n.body));
  const actions = n.actions || [];
  const close = (then) => async () => {
    $("alert-layer").classList.add("hidden");
    await then();
    showNextAlert();
  };
  let buttons;
  if (n.opensApp === false) {
    // hasAction NO: one button, which dismisses; the app is never opened.
    buttons = element("div", "alert-buttons");
    buttons.append(button("OK", "ok bold", close(() => respond(n, DISMISS))));
  } else if (actions.length === 0) {
    buttons = element("div", "alert-buttons two");
    buttons.append(button("Close", "close", close(() => respond(n, DISMISS))),
      button(n.actionTitle || "Open", "bold open", close(() => act(n, null))));
  } else {
    buttons = element("div", "alert-buttons");
    for (const action of actions) {
      if (isTextInput(action)) {
        buttons.append(replyForm(action, (typed) => close(() => act(n, action, typed))()));
      } else {
        const node = button(action.title, action.destructive ? "destructive" : "", close(() => act(n, action)));
        node.dataset.action = action.identifier;
        buttons.append(node);
      }
    }
    buttons.append(button("Close", "close bold", close(() => respond(n, DISMISS))));
  }
  panel.replaceChildren(text, buttons);
  $("alert-layer").classList.remove("hidden");
}

let audio = null;

function defaultTone(context) {
  // The default sound: two short tones.
  const at = context.currentTime;
  for (const [offset, frequency] of [[0, 880], [0.16, 1320]]) {
    const oscillator = context.createOscillator();
    const gain = context.createGain();
    oscillator.frequency.value = frequency;
    gain.gain.setValueAtTime(0.15, at + offset);
    gain.gain.exponentialRampToValueAtTime(0.001, at + offset + 0.14);
    oscillator.connect(gain).connect(context.destination);
    oscillator.start(at + offset);
    oscillator.stop(at + offset + 0.15);
  }
}

// Plays a presentation's sound: the app's file, or the default tone.
async function playSound(entry, record) {
  const p = entry.presentation;
  audio = audio || new AudioContext();
  if (p.soundFile) {
    try {
      const name = p.soundFile.split("/").pop();
      const response = await fetch(`/apps/${encodeURIComponent(entry.app)}/sounds/${encodeURIComponent(name)}`);
      if (!response.ok) throw new Error(await response.text());
      const buffer = await audio.decodeAudioData(await response.arrayBuffer());
      const source = audio.createBufferSource();
      source.buffer = buffer;
      source.connect(audio.destination);
      source.start();
      record.played = "file";
    } catch (error) {
      record.note = `the browser could not play the file: ${error.message}`;
      defaultTone(audio);
    }
  } else {
    defaultTone(audio);
  }
}

function recordSound(record) {
  window.heraldSounds.push(record);
  if (window.heraldSounds.length > 1000) window.heraldSounds.splice(0, window.heraldSounds.length - 1000);
}

// What a batch of arrivals does. Sounds: every one is recorded, the last one plays (many at the
// same moment are one sound). A banner: the newest. Alerts wait in turn.
function handle(batch) {
  const sounds = [];
  let banner = null;
  for (const entry of batch) {
    window.heraldEvents.push({ kind: entry.kind, app: entry.app, identifier: entry.identifier || null });
    switch (entry.kind) {
      case "presented": {
        const p = entry.presentation;
        if (!p) break;
        if (p.sound) sounds.push(entry); // silent: sounds off, none asked for, passive, silenced
        if (screen.locked) {
          // On the lock screen: it lights the screen if it may (not passive, silenced or quiet ones).
          if (p.wakesScreen === true) setAwake(true);
          break;
        }
        // Nothing to show (a badge, a sound), only in the list, silenced or quiet: no banner.
        if (p.hasText === false || p.alertStyle === "none" || p.silencedBy || p.quiet) break;
        const n = notificationFor(entry);
        if (p.alertStyle === "alert") {
          alerts.push(n);
          showNextAlert();
        } else {
          banner = { kind: "notification", n };
        }
        break;
      }
      case "activityAlert":
        if (entry.activity && entry.activity.alert) {
          const a = entry.activity;
          if (a.alert.sound) sounds.push(entry);
          if (!screen.locked) banner = { kind: "activity", a };
        }
        break;
      case "summary":
        // Delivered silently; it lights the screen like a notification does.
        if (screen.locked) setAwake(true);
        else if (entry.summary) banner = { kind: "summary", entry };
        break;
      case "removed": {
        // Taken away (answered elsewhere, removed by the app, a legacy cancel): off the screen too.
        const gone = new Set(entry.identifiers || (entry.identifier ? [entry.identifier] : []));
        const panel = $("alert");
        if (panel.dataset.app === entry.app && gone.has(panel.dataset.identifier)
            && !$("alert-layer").classList.contains("hidden")) {
          $("alert-layer").classList.add("hidden");
          showNextAlert();
        }
        for (let k = alerts.length - 1; k >= 0; k--) {
          if (alerts[k].app === entry.app && gone.has(alerts[k].identifier)) alerts.splice(k, 1);
        }
        const shownCard = document.querySelector("#banner .card");
        if (shownCard && shownCard.dataset.app === entry.app && gone.has(shownCard.dataset.identifier)) putBannerAway();
        if (banner && banner.kind === "notification" && banner.n.app === entry.app && gone.has(banner.n.identifier)) {
          banner = null;
        }
        break;
      }
      case "lock":
        setAwake(entry.locked === false);
        break;
      default:
        break; // held (no banner, no sound), focus, badges, app states: the render shows them
    }
  }
  if (window.heraldEvents.length > 500) window.heraldEvents.splice(0, window.heraldEvents.length - 500);
  if (banner && banner.kind === "notification") showBanner(banner.n);
  if (banner && banner.kind === "activity") activityBanner(banner.a);
  if (banner && banner.kind === "summary") showSummaryBanner(banner.entry);
  sounds.forEach((entry, index) => {
    const last = index === sounds.length - 1;
    const activity = entry.kind === "activityAlert";
    const record = activity
      ? { app: entry.app, identifier: entry.activity.id, sound: entry.activity.alert.sound, played: "default", note: null }
      : { app: entry.app, identifier: entry.identifier, sound: entry.presentation.sound, played: "default",
        note: entry.presentation.soundFallback || null };
    if (!last) {
      record.played = "none";
      record.note = "another sound played at the same moment";
      recordSound(record);
    } else if (activity) {
      audio = audio || new AudioContext();
      defaultTone(audio);
      recordSound(record);
    } else {
      playSound(entry, record).then(() => recordSound(record));
    }
  });
}

// A Live Activity's alert: locked, its card on the lock screen is the alert; unlocked, a banner.
// Its sound plays when the settings let it (the daemon sends the sound only then).
function activityBanner(a) {
  // A copy without the card's listeners: an activity's alert is no notification to open or answer.
  const node = card({
    app: a.app, appName: appName(a.app), identifier: a.id, title: a.alert.title || "", subtitle: "",
    body: a.alert.body || "", date: a.updatedAt, alertAction: "", launchImageName: "",
  }, [], {}).cloneNode(true);
  node.classList.add("activity-alert");
  node.dataset.activity = a.id;
  node.addEventListener("click", putBannerAway);
  $("banner").replaceChildren(node);
  $("banner").classList.remove("hidden");
  clearTimeout(bannerTimer);
  bannerTimer = setTimeout(putBannerAway, 5000);
}

// The log's entries as they come, handled in batches: each batch after a read of the screen that
// started after its entries happened.
const inbox = [];
let draining = false;

async function drain() {
  if (draining) return;
  draining = true;
  try {
    while (inbox.length > 0) {
      const batch = inbox.splice(0);
      try {
        await refresh();
      } catch (error) {
        console.error(error);
        await sleep(REFRESH_GAP);
        continue;
      }
      handle(batch);
    }
  } finally {
    draining = false;
  }
}

function listen() {
  const events = new EventSource("/events");
  let opened = false;
  events.onopen = () => {
    $("status-link").classList.remove("down");
    document.body.dataset.live = "yes";
    if (opened) refresh(); // back after a break: what happened meanwhile
    opened = true;
  };
  events.onerror = () => {
    $("status-link").classList.add("down");
    document.body.dataset.live = "no";
  };
  events.onmessage = (message) => {
    inbox.push(JSON.parse(message.data));
    drain();
  };
}

async function setLocked(locked) {
  await api("PUT", "/lock", { locked });
  await refresh();
  setAwake(!locked);
}

function openFocus() {
  renderFocus();
  $("focus-layer").classList.remove("hidden");
}

// Touching the screen wakes it.
$("phone").addEventListener("pointerdown", () => {
  if (screen && screen.locked) setAwake(true);
}, true);
$("unlock").addEventListener("click", () => setLocked(false));
$("lock").addEventListener("click", () => setLocked(true));
$("lock-from-app").addEventListener("click", () => setLocked(true));
$("go-home").addEventListener("click", () => api("POST", "/home").then(refresh));
$("open-center").addEventListener("click", () => { view = "center"; render(); });
$("close-center").addEventListener("click", () => { view = "auto"; render(); });
$("clear-all").addEventListener("click", async () => {
  for (const n of screen.notifications) await respond(n, DISMISS, undefined, undefined, { refresh: false }).catch(console.error);
  await refresh();
});
$("open-settings").addEventListener("click", async () => {
  await loadSummarySettings(); // first, so the screen is drawn once
  view = "settings";
  settingsApp = null;
  summaryError = "";
  render();
});
$("close-settings").addEventListener("click", () => { view = "auto"; render(); });
$("settings-back").addEventListener("click", () => {
  settingsApp = null;
  summaryError = "";
  editingSummary = false;
  renderSettings();
});
$("settings-app").addEventListener("change", changeSetting);
$("settings-summary").addEventListener("change", changeSummary);
$("settings-summary").addEventListener("submit", changeSummary);
$("open-focus").addEventListener("click", openFocus);
$("lock-focus").addEventListener("click", openFocus);
$("focus-close").addEventListener("click", () => $("focus-layer").classList.add("hidden"));
$("passcode").addEventListener("submit", (event) => { event.preventDefault(); submitPasscode(); });
$("passcode-cancel").addEventListener("click", closePasscode);
$("prompt-allow").addEventListener("click", () => api("POST", `/prompts/${encodeURIComponent($("prompt").dataset.app)}`, { allow: true }).then(refresh));
$("prompt-deny").addEventListener("click", () => api("POST", `/prompts/${encodeURIComponent($("prompt").dataset.app)}`, { allow: false }).then(refresh));
buildKeypad();
refresh().then(() => {
  if (screen.locked) setAwake(true);
  listen();
});
