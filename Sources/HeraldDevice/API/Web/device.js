// The web device: renders what the daemon says the screen shows (GET /screen) and follows the
// device's log live (GET /events, Server-Sent Events). Every tap goes through the device API, so the
// engine decides what happens, exactly as for `herald respond`. No framework, no build step.
"use strict";

const $ = (id) => document.getElementById(id);
const DEFAULT = "com.apple.UNNotificationDefaultActionIdentifier";
const DISMISS = "com.apple.UNNotificationDismissActionIdentifier";
let screen = null;
let bannerTimer = null;
let afterUnlock = null;
let view = "auto"; // "auto" (lock, home or app from the device's state), "center" or "settings"
let settingsApp = null;
const alerts = []; // alerts waiting to be shown, oldest first
// What played, for people reading the page and for tests: {app, identifier, sound, played, note}.
window.heraldSounds = [];

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

async function api(method, path, body) {
  const response = await fetch(path, {
    method, headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store",
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.json();
}

function appName(bundleID) {
  return (screen.apps.find((a) => a.bundleID === bundleID) || { name: bundleID }).name;
}

function relativeTime(date) {
  const seconds = Math.max(0, Math.round((new Date(screen.now) - new Date(date)) / 1000));
  if (seconds < 60) return "now";
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)}h ago`;
  return `${Math.floor(seconds / 86400)}d ago`;
}

// MARK: - Responding (the engine's response path: POST /apps/<app>/delivered/<id>/respond)

async function respond(n, action, text) {
  const body = { action: action === DEFAULT ? "default" : action === DISMISS ? "dismiss" : action };
  if (text !== undefined) body.text = text;
  await api("POST", `/apps/${encodeURIComponent(n.app)}/delivered/${encodeURIComponent(n.identifier)}/respond`, body);
  await refresh();
}

// On the lock screen, opening the app or an action that needs authentication asks to unlock first.
function needsUnlock(action) {
  return screen.locked && (action === null || action.authenticationRequired || action.foreground);
}

function act(n, action, text) {
  const run = () => respond(n, action ? action.identifier : DEFAULT, text);
  if (needsUnlock(action)) {
    afterUnlock = run;
    $("unlock-hint").textContent = `Unlock to ${action ? action.title : "open " + n.appName}`;
    $("unlock-hint").classList.remove("hidden");
    return;
  }
  run();
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

// A notification as a card. `actions`: the context's actions, shown when the card is expanded.
function card(n, actions, options = {}) {
  const node = element("article", "card");
  node.dataset.app = n.app;
  node.dataset.identifier = n.identifier;
  const head = element("div", "card-head");
  const icon = element("span", "mini-icon", n.appName.charAt(0));
  icon.style.background = colour(n.app);
  head.append(icon, element("span", "card-app", n.appName), element("span", "card-time", relativeTime(n.date)));
  if (actions.length > 0) {
    head.append(button("⌄", "expand", () => node.classList.toggle("expanded")));
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
  if (options.foot) {
    const foot = [n.alertAction];
    if (n.launchImageName) foot.push(`launch image ${n.launchImageName}`);
    node.append(element("div", "card-foot", foot.join(" · ")));
  }
  if (actions.length > 0) {
    const box = actionButtons(n, actions);
    box.classList.add("hidden");
    node.append(box);
    const observer = () => box.classList.toggle("hidden", !node.classList.contains("expanded"));
    new MutationObserver(observer).observe(node, { attributes: true, attributeFilter: ["class"] });
    if (options.expanded) node.classList.add("expanded");
  }
  // Tapping the notification opens it: the default action.
  node.addEventListener("click", () => act(n, null));
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
  const icon = element("span", "mini-icon", a.appName.charAt(0));
  icon.style.background = colour(a.app);
  head.append(icon, element("span", "card-app", a.appName));
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

function renderClock() {
  const now = new Date(screen.now);
  const zone = { timeZone: screen.timeZone };
  const time = now.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", ...zone });
  $("status-time").textContent = time;
  $("lock-time").textContent = time;
  $("lock-date").textContent = now.toLocaleDateString([], { weekday: "long", month: "long", day: "numeric", ...zone });
}

function renderHome() {
  const apps = screen.apps.map((app) => {
    const node = button("", "app", () => api("POST", `/apps/${encodeURIComponent(app.bundleID)}/open`).then(refresh));
    node.dataset.app = app.bundleID;
    const icon = element("span", "icon", app.name.charAt(0));
    icon.style.background = colour(app.bundleID);
    if (app.badge > 0) icon.append(element("span", "badge", String(app.badge)));
    node.append(icon, element("span", "app-name", app.name));
    return node;
  });
  $("app-grid").replaceChildren(...apps);
  $("no-apps").classList.toggle("hidden", apps.length > 0);
}

function renderCenter() {
  // Grouped by app, then by thread, newest group first.
  const groups = new Map();
  for (const n of screen.notifications) {
    const key = `${n.app}\u0000${n.threadIdentifier}`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(n);
  }
  const nodes = [];
  for (const list of groups.values()) {
    const group = element("section", "group");
    group.dataset.app = list[0].app;
    group.dataset.thread = list[0].threadIdentifier;
    const head = element("div", "group-head");
    const label = list[0].threadIdentifier ? `${list[0].appName} · ${list[0].threadIdentifier}` : list[0].appName;
    head.append(element("span", null, label), element("span", "group-count", `${list.length}`));
    group.append(head, ...list.map((n) => card(n, n.actions, { clearable: true })));
    nodes.push(group);
  }
  $("center-groups").replaceChildren(...nodes);
  $("center-empty").classList.toggle("hidden", nodes.length > 0);
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

function renderSettings() {
  $("settings-back").classList.toggle("hidden", settingsApp === null);
  $("settings-apps").classList.toggle("hidden", settingsApp !== null);
  $("settings-app").classList.toggle("hidden", settingsApp === null);
  if (settingsApp === null) {
    $("settings-title").textContent = "Notifications";
    $("settings-apps").replaceChildren(...screen.apps.map((app) => {
      const row = button("", "settings-row", () => { settingsApp = app.bundleID; renderSettings(); });
      row.dataset.app = app.bundleID;
      const icon = element("span", "mini-icon", app.name.charAt(0));
      icon.style.cssText = `background:${colour(app.bundleID)};width:28px;height:28px;border-radius:7px`;
      row.append(icon, element("span", "grow", app.name), element("span", "detail", summary(app.settings)));
      return row;
    }));
    return;
  }
  const app = screen.apps.find((a) => a.bundleID === settingsApp);
  if (!app) { settingsApp = null; renderSettings(); return; }
  $("settings-title").textContent = app.name;
  const s = app.settings;
  const on = allowed(s);
  const form = $("settings-app");
  form.dataset.app = app.bundleID;
  const main = element("div", "settings-group");
  main.append(settingRow("Allow Notifications", toggle("allow", on, false)));
  const alerts = element("div", "settings-group");
  alerts.append(settingRow("Alert Style",
    segments("alertStyle", [["none", "None"], ["banner", "Banner"], ["alert", "Alert"]], s.alertStyle, !on)));
  for (const key of ["lockScreenSetting", "notificationCenterSetting", "soundSetting", "badgeSetting"]) {
    alerts.append(settingRow(settingNames[key], toggle(key, s[key] === "enabled", !on || s[key] === "notSupported")));
  }
  const previews = element("div", "settings-group");
  previews.append(settingRow("Show Previews", segments("showPreviewsSetting",
    [["always", "Always"], ["whenAuthenticated", "Unlocked"], ["never", "Never"]], s.showPreviewsSetting, !on)));
  form.replaceChildren(main, element("div", "settings-caption", "Alerts"), alerts, previews);
}

// A change in the form: the same as PATCH /apps/<app>/settings; it applies to the next notification.
async function changeSetting(event) {
  const input = event.target;
  const app = $("settings-app").dataset.app;
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
  document.body.dataset.screen = shown;
  document.body.dataset.locked = locked ? "yes" : "no";
  renderClock();
  $("lock-activities").replaceChildren(...(screen.activities || []).map(activityCard));
  $("lock-notifications").replaceChildren(
    ...screen.notifications.map((n) => card(n, n.minimalActions, { foot: true, clearable: true })));
  if (!locked) $("unlock-hint").classList.add("hidden");
  renderHome();
  if (screen.foreground) {
    const front = screen.apps.find((a) => a.bundleID === screen.foreground);
    $("front-name").textContent = front ? front.name : screen.foreground;
    $("front-icon").textContent = (front ? front.name : "?").charAt(0);
    $("front-icon").style.background = colour(screen.foreground);
    $("app-screen").dataset.app = screen.foreground;
  }
  renderCenter();
  if (shown === "settings") renderSettings();
  renderPrompt();
}

async function refresh() {
  screen = await api("GET", "/screen");
  render();
}

// MARK: - Arrivals: banner, alert, sound

function notificationFor(entry) {
  return screen.notifications.find((n) => n.app === entry.app && n.identifier === entry.identifier) || {
    app: entry.app, appName: appName(entry.app), identifier: entry.identifier || "", title: entry.presentation.title,
    subtitle: entry.presentation.subtitle, body: entry.presentation.body, date: entry.date, alertAction: "",
    launchImageName: "", actions: [], minimalActions: [], threadIdentifier: "",
  };
}

function showBanner(n) {
  const node = card(n, n.minimalActions, {});
  node.addEventListener("click", () => $("banner").classList.add("hidden"));
  // The grabber puts the banner away (a swipe up): it stays in Notification Center.
  const grabber = button("", "grabber", () => $("banner").classList.add("hidden"));
  grabber.title = "Put away";
  $("banner").replaceChildren(node, grabber);
  $("banner").classList.remove("hidden");
  clearTimeout(bannerTimer);
  // A banner leaves after a few seconds, unless expanded; the notification stays in Notification Center.
  const leave = () => {
    if (node.classList.contains("expanded")) bannerTimer = setTimeout(leave, 5000);
    else $("banner").classList.add("hidden");
  };
  bannerTimer = setTimeout(leave, 5000);
}

function showNextAlert() {
  if (!$("alert-layer").classList.contains("hidden") || alerts.length === 0) return;
  const n = alerts.shift();
  const panel = $("alert");
  panel.dataset.app = n.app;
  panel.dataset.identifier = n.identifier;
  const text = element("div", "alert-text");
  text.append(element("div", "alert-app", n.appName));
  if (n.title) text.append(element("h3", null, n.title));
  if (n.subtitle) text.append(element("p", "alert-subtitle", n.subtitle));
  if (n.body) text.append(element("p", null, n.body));
  const buttons = element("div", n.actions.length === 0 ? "alert-buttons two" : "alert-buttons");
  const close = (then) => async () => {
    $("alert-layer").classList.add("hidden");
    await then();
    showNextAlert();
  };
  if (n.actions.length === 0) {
    buttons.append(button("Close", "close", close(() => respond(n, DISMISS))),
      button("Open", "bold open", close(() => act(n, null))));
  } else {
    for (const action of n.actions) {
      if (isTextInput(action)) {
        buttons.append(replyForm(action, (text) => close(() => act(n, action, text))()));
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

async function playSound(entry) {
  const p = entry.presentation;
  if (!p.sound) return; // silent: sounds off, or none asked for
  audio = audio || new AudioContext();
  const record = { app: entry.app, identifier: entry.identifier, sound: p.sound, played: "default", note: p.soundFallback || null };
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
  window.heraldSounds.push(record);
}

async function arrived(entry) {
  const p = entry.presentation;
  const n = notificationFor(entry);
  playSound(entry);
  if (screen.locked || p.alertStyle === "none") return; // it is on the lock screen, or only in the list
  if (p.alertStyle === "alert") {
    alerts.push(n);
    showNextAlert();
  } else {
    showBanner(n);
  }
}

// A Live Activity's alert: locked, its card on the lock screen is the alert; unlocked, a banner.
// Its sound plays when the settings let it (the daemon sends the sound only then).
function activityAlert(a) {
  if (a.alert.sound) {
    audio = audio || new AudioContext();
    defaultTone(audio);
    window.heraldSounds.push({ app: a.app, identifier: a.id, sound: a.alert.sound, played: "default", note: null });
  }
  if (screen.locked) return;
  // A copy without the card's listeners: an activity's alert is no notification to open or answer.
  const node = card({
    app: a.app, appName: appName(a.app), identifier: a.id, title: a.alert.title || "", subtitle: "",
    body: a.alert.body || "", date: a.updatedAt, alertAction: "", launchImageName: "",
  }, [], {}).cloneNode(true);
  node.classList.add("activity-alert");
  node.dataset.activity = a.id;
  node.addEventListener("click", () => $("banner").classList.add("hidden"));
  $("banner").replaceChildren(node);
  $("banner").classList.remove("hidden");
  clearTimeout(bannerTimer);
  bannerTimer = setTimeout(() => $("banner").classList.add("hidden"), 5000);
}

function listen() {
  const events = new EventSource("/events");
  events.onopen = () => {
    $("status-link").classList.remove("down");
    document.body.dataset.live = "yes";
  };
  events.onerror = () => {
    $("status-link").classList.add("down");
    document.body.dataset.live = "no";
  };
  events.onmessage = async (message) => {
    const entry = JSON.parse(message.data);
    await refresh();
    if (entry.kind === "presented" && entry.presentation) arrived(entry);
    if (entry.kind === "activityAlert" && entry.activity && entry.activity.alert) activityAlert(entry.activity);
  };
}

async function setLocked(locked) {
  await api("PUT", "/lock", { locked });
  await refresh();
  if (!locked && afterUnlock) {
    const run = afterUnlock;
    afterUnlock = null;
    await run();
  }
}

$("unlock").addEventListener("click", () => setLocked(false));
$("lock").addEventListener("click", () => setLocked(true));
$("lock-from-app").addEventListener("click", () => setLocked(true));
$("go-home").addEventListener("click", () => api("POST", "/home").then(refresh));
$("open-center").addEventListener("click", () => { view = "center"; render(); });
$("close-center").addEventListener("click", () => { view = "auto"; render(); });
$("clear-all").addEventListener("click", async () => {
  for (const n of screen.notifications) await respond(n, DISMISS);
});
$("open-settings").addEventListener("click", () => { view = "settings"; settingsApp = null; render(); });
$("close-settings").addEventListener("click", () => { view = "auto"; render(); });
$("settings-back").addEventListener("click", () => { settingsApp = null; renderSettings(); });
$("settings-app").addEventListener("change", changeSetting);
$("prompt-allow").addEventListener("click", () => api("POST", `/prompts/${encodeURIComponent($("prompt").dataset.app)}`, { allow: true }).then(refresh));
$("prompt-deny").addEventListener("click", () => api("POST", `/prompts/${encodeURIComponent($("prompt").dataset.app)}`, { allow: false }).then(refresh));
refresh().then(listen);
