#!/usr/bin/env python3
"""Today's iPhone on the web device, driven in headless Chromium the way a person uses it.

    web_today.py DEVICE_URL DEVELOPMENT_URL BEARER DEMO_TOKEN HERALD DEVICE_STATE SHOTS

Against a `herald up --manual-clock` (the device's clock moves only with `herald device clock
--advance`). DEVICE_URL is the page `herald up` printed; DEVELOPMENT_URL, BEARER and DEMO_TOKEN come
from the curl command it printed; HERALD is the herald executable, DEVICE_STATE the device's state
directory. Pushes are sent with curl; the page is never reloaded.

Steps, one JSON object printed per step: a badge-only push (the icon's badge, nothing else) and
`{"foo":1}` (nothing); passive pushes (no sound, no banner, the screen stays asleep, listed only);
Do Not Disturb from the page's Focus control (a push silenced and marked, a Time Sensitive one
breaking through, the Focus on the lock screen) and off again from the lock screen; provisional
apps' Keep… → Deliver Prominently and Turn Off… in Notification Center; a stack in Notification
Center; a locked-device action that needs the passcode (a wrong one, then 0000: it runs and the
device stays locked); Scheduled Summary set in Settings, pushes held, the clock moved past its time,
the summary on the lock screen and one of its notifications opened as itself (the passcode unlocks).
Saves web-device-focus.png and web-device-summary.png in SHOTS; exits 1 naming the step that failed.
Needs Debian's chromium, chromium-driver and python3-selenium.
"""
import datetime
import json
import os
import subprocess
import sys
from zoneinfo import ZoneInfo

from browser import Browser, emit
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as shown

DEVICE, DEVELOPMENT, BEARER, DEMO_TOKEN, HERALD, STATE, SHOTS = sys.argv[1:8]
DEMO, QUIET, HUSH = "dev.herald.demo", "com.example.quiet", "com.example.hush"


def herald(*arguments):
    return subprocess.run([HERALD, *arguments, "--device-state", STATE], check=True, capture_output=True,
                          text=True, timeout=30).stdout.strip()


def push(payload, extra=()):
    """A push to the demo app as a provider sends it, with curl over h2c; returns its apns-id."""
    result = subprocess.run(
        ["curl", "-sS", "-i", "--http2-prior-knowledge", f"{DEVELOPMENT}/3/device/{DEMO_TOKEN}",
         "-H", f"apns-topic: {DEMO}", "-H", f"authorization: bearer {BEARER}", *extra, "-d", json.dumps(payload)],
        check=True, capture_output=True, text=True, timeout=30)
    lines = result.stdout.splitlines()
    if not lines or lines[0].strip() != "HTTP/2 200":
        raise RuntimeError(f"push: {result.stdout} {result.stderr}")
    return next(line.split(":", 1)[1].strip() for line in lines if line.lower().startswith("apns-id:"))


def screen():
    return driver.execute_script("return fetch('/screen').then(r => r.json())")


def app_now(app):
    return next(a for a in screen()["apps"] if a["bundleID"] == app)


def handled(identifier, kind=None):
    """Waits until the page has handled the log entry of `identifier` (of `kind`); returns its kind."""
    wait.until(lambda d: d.execute_script(
        "return window.heraldEvents.some(e => e.identifier === arguments[0] && (!arguments[1] || e.kind === arguments[1]))",
        identifier, kind))
    return driver.execute_script(
        "return window.heraldEvents.filter(e => e.identifier === arguments[0]).map(e => e.kind)", identifier)


def sounds(identifier=None):
    return driver.execute_script(
        "return window.heraldSounds.filter(s => !arguments[0] || s.identifier === arguments[0])", identifier)


def body(key):
    return driver.execute_script("return document.body.dataset[arguments[0]] || null", key)


def displayed(selector):
    return any(e.is_displayed() for e in driver.find_elements(By.CSS_SELECTOR, selector))


def count(selector):
    return len(driver.find_elements(By.CSS_SELECTOR, selector))


def texts(selector):
    return driver.execute_script(
        "return [...document.querySelectorAll(arguments[0])].map(e => e.textContent)", selector)


def settled_banner(text):
    """Waits until the banner shows `text` and has finished sliding in."""
    wait.until(lambda d: d.execute_script(
        "const b = document.querySelector('#banner .card-body');"
        "return !!b && b.textContent === arguments[0] && document.getElementById('banner').getAnimations().length === 0",
        text))


def put_banner_away():
    if displayed("#banner .grabber"):
        click("#banner .grabber")
    wait.until_not(shown.visibility_of_element_located((By.ID, "banner")))


def on(name):
    wait.until(lambda d: body("screen") == name)


def lit():
    """Waits until the screen is awake and fully lit (the sleep layer has faded out)."""
    wait.until(lambda d: d.execute_script(
        "const s = document.getElementById('sleep');"
        "return document.body.dataset.awake === 'yes' && getComputedStyle(s).opacity === '0' && s.getAnimations().length === 0"))


def shot(name):
    driver.save_screenshot(os.path.join(SHOTS, f"web-device-{name}.png"))


def lock():
    click("#lock")
    on("lock")
    wait.until(lambda d: body("awake") == "no")


def unlock():
    click("#unlock")
    wait.until(lambda d: body("screen") in ("home", "app"))


def press_keys(code):
    for digit in code:
        click(f'#passcode-keys button[data-key="{digit}"]')


def reveal(selector):
    """Opens Notification Center's stack that holds `selector` (its line, as a person taps it), and
    waits until it shows."""
    wait.until(lambda d: count(selector) > 0)
    if not displayed(selector):
        stack = driver.execute_script(
            "const s = document.querySelector(arguments[0]).closest('.stack');"
            "return s ? `.stack[data-app=\"${s.dataset.app}\"][data-thread=\"${s.dataset.thread}\"]` : null",
            selector)
        if stack:
            click(f"#center-groups {stack} .stack-line")
    return visible(selector)


def quiet_in_center():
    return texts("#center-groups .quiet-buttons button")


def click(selector):
    """Clicks as browser.click does (which finds a redrawn element again)."""
    return browser.click(selector)


browser = Browser(window="430,900", extra=["--autoplay-policy=no-user-gesture-required"])
driver, wait = browser.driver, browser.wait
text, visible = browser.text, browser.visible
step = "open"
try:
    driver.get(DEVICE)
    wait.until(lambda d: body("live") == "yes")
    visible("#home-screen")
    driver.execute_script("window.heraldMark = 'still the same page'")

    step = "badge only"
    badge = f'#app-grid .app[data-app="{DEMO}"] .badge'
    before = len(screen()["notifications"])
    badge_id = push({"aps": {"badge": 7}})
    wait.until(lambda d: text(badge) == "7")
    kinds = handled(badge_id, "presented")
    nothing_id = push({"foo": 1})
    nothing_kinds = handled(nothing_id)
    # The page handles an entry in one go (banner, sound, wake): once it has, what it would wrongly
    # show is on the page.
    emit(step="badge only", badge=text(badge), kinds=kinds, nothingKinds=nothing_kinds,
         banner=displayed("#banner"), lockCards=count("#lock-notifications .card"),
         centerCards=count("#center-groups .card"), listed=len(screen()["notifications"]) - before,
         sounds=len(sounds()))

    step = "passive"
    lock()
    passive_id = push({"aps": {"alert": {"title": "Daily digest", "body": "Three new articles"},
                               "interruption-level": "passive", "sound": "default"}})
    visible(f'#lock-notifications .card[data-identifier="{passive_id}"]')
    handled(passive_id, "presented")
    locked_awake = body("awake")
    unlock()
    passive2_id = push({"aps": {"alert": {"title": "Weekly tip", "body": "Try the widgets"},
                                "interruption-level": "passive", "sound": "default"}})
    handled(passive2_id, "presented")
    banner_after = displayed("#banner")
    click("#open-center")
    reveal(f'#center-groups .card[data-identifier="{passive2_id}"]')
    emit(step="passive", awake=locked_awake, banner=banner_after,
         sounds=len(sounds(passive_id)) + len(sounds(passive2_id)),
         center=all(count(f'#center-groups .card[data-identifier="{i}"]') == 1 for i in (passive_id, passive2_id)),
         level=next(n["level"] for n in screen()["notifications"] if n["identifier"] == passive_id))
    click("#close-center")

    step = "focus"
    click("#open-focus")
    visible("#focus-layer")
    modes = texts("#focus-modes .focus-mode")
    click('#focus-modes .focus-mode[data-mode="do-not-disturb"]')
    wait.until(lambda d: body("focus") == "do-not-disturb")
    wait.until_not(shown.visibility_of_element_located((By.ID, "focus-layer")))
    status_focus = text("#status-focus")
    silenced_id = push({"aps": {"alert": {"title": "Lunch?", "body": "Noon at the usual place"}, "sound": "default"}})
    handled(silenced_id, "presented")
    silenced_banner, silenced_sounds = displayed("#banner"), len(sounds(silenced_id))
    urgent_id = push({"aps": {"alert": {"title": "Delivery", "body": "Your courier is at the door"},
                              "interruption-level": "time-sensitive", "sound": "default"}})
    settled_banner("Your courier is at the door")
    wait.until(lambda d: len(sounds(urgent_id)) == 1)
    urgent_banner = {"label": text("#banner .card-label"), "title": text("#banner .card-title"),
                     "sound": sounds(urgent_id)[0]["sound"]}
    put_banner_away()
    click("#open-center")
    mark = f'#center-groups .card[data-identifier="{silenced_id}"] .card-silenced'
    reveal(mark)
    center_mark = text(mark)
    click("#close-center")
    lock()
    pill = {"text": text("#lock-focus"), "on": "on" in driver.find_element(By.ID, "lock-focus").get_attribute("class")}
    asleep_id = push({"aps": {"alert": {"title": "Newsletter", "body": "This week in gardening"}, "sound": "default"}})
    handled(asleep_id, "presented")
    after_silenced = {"awake": body("awake"), "onLock": count(f'#lock-notifications .card[data-identifier="{asleep_id}"]'),
                      "sounds": len(sounds(asleep_id))}
    gate_id = push({"aps": {"alert": {"title": "Flight LH 1234", "body": "Gate changed to B12"},
                            "interruption-level": "time-sensitive", "sound": "default"}})
    gate_card = f'#lock-notifications .card[data-identifier="{gate_id}"]'
    visible(gate_card)
    wait.until(lambda d: body("awake") == "yes")
    wait.until(lambda d: len(sounds(gate_id)) == 1)
    lit()
    shot("focus")
    emit(step="focus", modes=modes, statusFocus=status_focus, silencedBanner=silenced_banner,
         silencedSounds=silenced_sounds, urgent=urgent_banner, centerMark=center_mark, pill=pill,
         afterSilenced=after_silenced, lockLabel=text(gate_card + " .card-label"), lockAwake=body("awake"),
         lockSounds=len(sounds(gate_id)), focus=(screen().get("focus") or {}).get("name"))

    step = "focus off"
    click("#lock-focus")
    visible("#focus-layer")
    click('#focus-modes .focus-mode[data-mode=""]')
    wait.until(lambda d: body("focus") is None)
    emit(step="focus off", pill=text("#lock-focus"), focus=screen().get("focus"))

    step = "provisional"
    unlock()
    quiet = {}
    for app in (QUIET, HUSH):
        herald("device", "install", app)
        answer = herald("app", app, "authorize", "--options", "provisional,alert,sound,badge")
        quiet[app] = herald("app", app, "add", "--title", app.split(".")[-1].capitalize(),
                            "--body", "Delivered quietly").split(" ")[-1]
        handled(quiet[app], "presented")
    quiet_banner = displayed("#banner")
    click("#open-center")
    keep_card = f'#center-groups .card[data-identifier="{quiet[QUIET]}"]'
    off_card = f'#center-groups .card[data-identifier="{quiet[HUSH]}"]'
    reveal(keep_card + " .quiet-buttons")
    first_buttons = texts(keep_card + " .quiet-buttons button")
    click(keep_card + " .quiet-buttons button.keep")
    keep_choices = texts(keep_card + " .quiet-buttons button")
    click(keep_card + ' .quiet-buttons button[data-choice="prominently"]')
    wait.until(lambda d: app_now(QUIET)["settings"]["authorizationStatus"] == "authorized")
    reveal(off_card + " .quiet-buttons")
    click(off_card + " .quiet-buttons button.turn-off")
    off_choices = texts(off_card + " .quiet-buttons button")
    click(off_card + ' .quiet-buttons button[data-choice="off"]')
    wait.until(lambda d: app_now(HUSH)["settings"]["authorizationStatus"] == "denied")
    wait.until(lambda d: len(quiet_in_center()) == 0)
    left_buttons = quiet_in_center()
    click("#close-center")
    click("#open-settings")
    visible(f'#settings-apps .settings-row[data-app="{QUIET}"]')
    wait.until(lambda d: text(f'#settings-apps .settings-row[data-app="{QUIET}"] .detail') != "Deliver Quietly")
    details = {app: text(f'#settings-apps .settings-row[data-app="{app}"] .detail') for app in (QUIET, HUSH)}
    kept = app_now(QUIET)["settings"]
    emit(step="provisional", answer=answer, banner=quiet_banner, buttons=first_buttons, keep=keep_choices,
         off=off_choices, left=left_buttons, details=details, keptStatus=kept["authorizationStatus"],
         keptAlertStyle=kept["alertStyle"], offStatus=app_now(HUSH)["settings"]["authorizationStatus"])
    click("#close-settings")

    step = "stack"
    thread = []
    for line in ["Are you coming?", "We saved you a seat", "Starting now"]:
        thread.append(push({"aps": {"alert": {"title": "Anna", "body": line, "summary-arg": "Anna"},
                                    "thread-id": "anna"}}))
    handled(thread[-1], "presented")
    put_banner_away()
    click("#open-center")
    stack = f'#center-groups .stack[data-app="{DEMO}"][data-thread="anna"]'
    visible(stack)
    collapsed = sum(e.is_displayed() for e in driver.find_elements(By.CSS_SELECTOR, stack + " .card"))
    line = text(stack + " .stack-line")
    click(stack + " .stack-line")
    wait.until(lambda d: sum(e.is_displayed() for e in d.find_elements(By.CSS_SELECTOR, stack + " .card")) == 3)
    emit(step="stack", count=driver.find_element(By.CSS_SELECTOR, stack).get_attribute("data-count"),
         collapsed=collapsed, line=line, top=text(stack + " > .card .card-body"),
         expanded=sum(e.is_displayed() for e in driver.find_elements(By.CSS_SELECTOR, stack + " .card")))
    click("#close-center")

    step = "passcode"
    herald("app", DEMO, "categories", "--category", "TASK=done+auth,open+foreground")
    lock()
    task_id = push({"aps": {"alert": {"title": "Chores", "body": "Water the plants"}, "category": "TASK"}})
    task = f'#lock-notifications .card[data-identifier="{task_id}"]'
    visible(task)
    click(task + " .expand")
    click(task + ' button[data-action="done"]')
    visible("#passcode")
    reason = text("#passcode-reason")
    press_keys("1234")
    click("#passcode-ok")
    visible("#passcode-error")
    wrong = {"error": text("#passcode-error"), "locked": screen()["locked"],
             "still": count(task) == 1}
    field = driver.find_element(By.ID, "passcode-input")
    field.send_keys("0000")
    click("#passcode-ok")
    wait.until_not(shown.visibility_of_element_located((By.ID, "passcode-layer")))
    wait.until(lambda d: count(task) == 0)
    log = driver.execute_script("return fetch('/log?limit=40').then(r => r.json())")
    told = [e["text"] for e in log if e.get("identifier") == task_id and e["kind"] == "response"]
    emit(step="passcode", reason=reason, wrong=wrong, locked=screen()["locked"], page=body("screen"),
         lockVisible=driver.find_element(By.ID, "lock-screen").is_displayed(), told=told)

    step = "summary settings"
    unlock()
    click("#open-settings")
    click('#settings-apps .settings-row[data-section="summary"]')
    visible("#settings-summary")
    click("#settings-summary .settings-group:first-child input[name='enabled']")
    wait.until(lambda d: d.execute_script("return fetch('/summary').then(r => r.json())")["settings"]["enabled"])
    now = screen()
    local = datetime.datetime.fromisoformat(now["now"].replace("Z", "+00:00")).astimezone(ZoneInfo(now["timeZone"]))
    at = (local + datetime.timedelta(minutes=30)).strftime("%H:%M")
    # The page redraws the section once the change is saved: type into what it shows then.
    wait.until(lambda d: d.execute_script("return window.heraldSettled()"))
    field = visible("#settings-summary input[name='time'][data-index='0']")
    field.send_keys(Keys.CONTROL, "a")
    field.send_keys(at, Keys.ENTER)
    wait.until(lambda d: at in d.execute_script("return fetch('/summary').then(r => r.json())")["settings"]["times"])
    wait.until(lambda d: d.execute_script("return window.heraldSettled()"))
    click(f"#settings-summary .settings-row[data-app='{DEMO}'] input[name='app']")
    wait.until(lambda d: DEMO in d.execute_script("return fetch('/summary').then(r => r.json())")["settings"]["apps"])
    summary_settings = driver.execute_script("return fetch('/summary').then(r => r.json())")["settings"]
    click("#settings-back")
    visible('#settings-apps .settings-row[data-section="summary"]')
    summary_row = text('#settings-apps .settings-row[data-section="summary"] .detail')
    click(f'#settings-apps .settings-row[data-app="{DEMO}"]')
    visible("#settings-app")
    app_rows = texts("#settings-app .settings-row .grow")
    time_sensitive = driver.find_element(By.CSS_SELECTOR, "#settings-app input[name='timeSensitiveSetting']").is_selected()
    in_summary = driver.find_element(By.CSS_SELECTOR, "#settings-app input[name='inSummary']").is_selected()
    click("#settings-app .segments label:has(input[name='groupingSetting'][value='byApp'])")
    wait.until(lambda d: app_now(DEMO)["settings"].get("groupingSetting") == "byApp")
    wait.until(lambda d: d.execute_script("return window.heraldSettled()"))
    click("#settings-app .segments label:has(input[name='groupingSetting'][value='automatic'])")
    wait.until(lambda d: app_now(DEMO)["settings"].get("groupingSetting", "automatic") == "automatic")
    for value in ["disabled", "enabled"]:
        # As a person does: the switch is turned once the page shows what the last turn did.
        wait.until(lambda d: d.execute_script("return window.heraldSettled()"))
        click("#settings-app input[name='timeSensitiveSetting']")
        wait.until(lambda d: app_now(DEMO)["settings"]["timeSensitiveSetting"] == value)
    emit(step="summary settings", at=at, settings=summary_settings, row=summary_row, rows=app_rows,
         timeSensitive=time_sensitive, inSummary=in_summary)
    click("#close-settings")

    step = "summary"
    lock()
    held = []
    for title, text_, score in [("Anna", "Photos from the weekend", 0.4), ("Bank", "Your statement is ready", 0.9),
                                ("Club", "Practice moved to Thursday", 0.1)]:
        held.append(push({"aps": {"alert": {"title": title, "body": text_}, "sound": "default",
                                  "relevance-score": score}}))
    for identifier in held:
        handled(identifier, "held")
    while_held = {"awake": body("awake"), "sounds": sum(len(sounds(i)) for i in held),
                  "onLock": sum(count(f'#lock-notifications .card[data-identifier="{i}"]') for i in held),
                  "held": screen()["held"]}
    advanced = herald("device", "clock", "--advance", "45m")
    card = "#lock-summaries .summary-card"
    visible(card)
    wait.until(lambda d: body("awake") == "yes")
    lit()
    shot("summary")
    summary = {"title": text(card + " .summary-title"), "count": text(card + " .summary-count"),
               "items": texts(card + " .summary-item b"), "awake": body("awake"),
               "sounds": sum(len(sounds(i)) for i in held),
               "inCenter": count("#center-summaries .summary-card")}
    click(card + " .summary-toggle")
    second = held[0]  # Anna's: the second most relevant
    item = f'{card} .summary-all .card[data-identifier="{second}"]'
    visible(item)
    click(item)
    visible("#passcode")
    open_reason = text("#passcode-reason")
    driver.find_element(By.ID, "passcode-input").send_keys("0000", Keys.ENTER)
    on("app")
    wait.until(lambda d: (text("#front-told") or "") != "")
    emit(step="summary", advanced=advanced, whileHeld=while_held, summary=summary, reason=open_reason,
         front=text("#front-name"), told=text("#front-told"), opened=second, locked=screen()["locked"],
         foreground=screen()["foreground"])

    step = "home"
    click("#go-home")
    on("home")
    emit(step="home", foreground=screen().get("foreground"),
         mark=driver.execute_script("return window.heraldMark || null"))

    step = "legacy"
    # A UILocalNotification in the alert style, its fire date already past: an alert panel at once,
    # labelled with its alertAction; cancelling it takes the panel off the screen.
    # (Scheduled Summary off first: it holds the demo app's notifications since the summary step.)
    subprocess.run(["curl", "-sS", "-X", "PATCH", f"{DEVICE.rstrip('/')}/summary", "-d", '{"enabled":false}'],
                   check=True, capture_output=True, timeout=30)
    subprocess.run(["curl", "-sS", "-X", "PATCH", f"{DEVICE.rstrip('/')}/apps/{DEMO}/settings",
                    "-d", '{"alertStyle":"alert"}'], check=True, capture_output=True, timeout=30)
    herald("app", DEMO, "schedule-legacy", "--id", "tea", "--body", "Tea is ready", "--alert-action", "Show me",
           "--fire-date", "2020-01-01T09:00:00Z")
    visible('#alert[data-identifier="tea"]')
    legacy_buttons = texts("#alert .alert-buttons button")
    herald("app", DEMO, "cancel-legacy", "tea")
    wait.until(lambda d: d.execute_script("return document.getElementById('alert-layer').classList.contains('hidden')"))
    listed = [n["identifier"] for n in screen()["notifications"]]
    # hasAction NO: one OK button, which dismisses.
    herald("app", DEMO, "schedule-legacy", "--id", "ok", "--body", "Just so you know", "--no-action")
    visible('#alert[data-identifier="ok"]')
    ok_buttons = texts("#alert .alert-buttons button")
    click("#alert .alert-buttons button")
    wait.until(lambda d: all(n["identifier"] != "ok" for n in screen()["notifications"]))
    emit(step="legacy", buttons=legacy_buttons, cancelled="tea" not in listed, okButtons=ok_buttons,
         foreground=screen().get("foreground"))
except Exception as error:  # the step and the page's state say what went wrong
    browser.fail("web today", step, error, os.path.join(SHOTS, "web-device-today-failed.png"), html=8000)
finally:
    driver.quit()
