#!/usr/bin/env python3
"""Drives the web device of a running `herald up` in headless Chromium, the way a person uses it.

    web_device.py DEVICE_URL DEVELOPMENT_URL BEARER DEMO_TOKEN HERALD DEVICE_STATE INVITES SHOTS

DEVICE_URL is the page `herald up` printed; DEVELOPMENT_URL, BEARER and DEMO_TOKEN come from the curl
command it printed; HERALD is the herald executable, DEVICE_STATE the device's state directory and
INVITES the Invites example (installed as dev.herald.invites). Pushes are sent with curl.

Steps, one JSON object printed per step: the permission dialog answered Don't Allow and Allow; a
push on the lock screen; an action that needs the passcode on the lock screen (it runs, still
locked); the badge on the home screen; a banner with its lock-screen actions and
its sound; Settings switched to alerts without sounds; an alert panel, silent, whose Accept runs the
app; a text reply from a banner; Notification Center grouped by thread, cleared one and all. The page
is never reloaded. Saves web-device-*.png in SHOTS and exits 1 naming the step that failed. Needs
Debian's chromium, chromium-driver and python3-selenium.
"""
import json
import math
import os
import struct
import subprocess
import sys
import shutil
import tempfile

from browser import Browser, emit
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as shown

DEVICE, DEVELOPMENT, BEARER, DEMO_TOKEN, HERALD, STATE, INVITES, SHOTS = sys.argv[1:9]
DEMO, TEA, INVITES_APP = "dev.herald.demo", "dev.herald.tea", "dev.herald.invites"
APP_LINK = {**os.environ, "HERALD_APP_LINK": os.path.join(STATE, "app.sock")}


def herald(*arguments):
    return subprocess.run([HERALD, *arguments, "--device-state", STATE], check=True, capture_output=True,
                          text=True).stdout


def push(token, topic, payload):
    """A push as a provider sends it, with curl over h2c; returns curl's status line."""
    result = subprocess.run(
        ["curl", "-sS", "-i", "--http2-prior-knowledge", f"{DEVELOPMENT}/3/device/{token}",
         "-H", f"apns-topic: {topic}", "-H", f"authorization: bearer {BEARER}", "-d", json.dumps(payload)],
        check=True, capture_output=True, text=True, timeout=30)
    status = result.stdout.splitlines()[0].strip()
    if status != "HTTP/2 200":
        raise RuntimeError(f"push to {topic}: {result.stdout} {result.stderr}")
    return status


def sounds(app):
    return driver.execute_script("return window.heraldSounds.filter(s => s.app === arguments[0])", app)


def screen():
    return driver.execute_script("return fetch('/screen').then(r => r.json())")


def app_now(app):
    """The app as the screen has it now: state, badge, settings."""
    return next(a for a in screen()["apps"] if a["bundleID"] == app)


def setting(app, key):
    """One of the app's settings as the device has it now."""
    return app_now(app)["settings"][key]


def shot(name):
    driver.save_screenshot(os.path.join(SHOTS, f"web-device-{name}.png"))


def settled_banner(body):
    """Waits until the banner shows `body` and has finished sliding in."""
    wait.until(lambda d: d.execute_script(
        "const b = document.querySelector('#banner .card-body');"
        "return !!b && b.textContent === arguments[0] && document.getElementById('banner').getAnimations().length === 0",
        body))


def banner_put_away(d):
    """Puts the banner away if it is up; true once it is gone. A banner may leave by itself at any
    moment (its five seconds are up, or the page learns from the log that its notification was
    removed), so it can go between a look and a click: then the click fails, and the next look
    finds it gone."""
    if not d.find_element(By.ID, "banner").is_displayed():
        return True
    try:
        d.find_element(By.CSS_SELECTOR, "#banner .grabber").click()
    except WebDriverException:
        pass
    return False


def chime(path):
    """A quarter-second 880 Hz WAV (16-bit mono, 8 kHz): a sound file an app ships."""
    rate, count = 8000, 2000
    samples = b"".join(struct.pack("<h", int(12000 * math.sin(2 * math.pi * 880 * i / rate))) for i in range(count))
    header = b"RIFF" + struct.pack("<I", 36 + len(samples)) + b"WAVEfmt " + struct.pack(
        "<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16) + b"data" + struct.pack("<I", len(samples))
    with open(path, "wb") as file:
        file.write(header + samples)


def answer_prompt(app, button, command):
    """Starts an app's authorization request, answers the dialog with `button`; returns the app's output."""
    process = subprocess.Popen(command, env=APP_LINK, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    visible(f'#prompt[data-app="{app}"]')
    seen = {"title": text("#prompt-title"), "body": text("#prompt-body")}
    if app == TEA:
        shot("prompt")
    click(button)
    out, err = process.communicate(timeout=30)
    wait.until_not(shown.visibility_of_element_located((By.ID, "prompt-layer")))
    return seen, out, err, process.returncode


browser = Browser(window="430,900", extra=["--autoplay-policy=no-user-gesture-required"])
driver, wait = browser.driver, browser.wait
text, visible, click = browser.text, browser.visible, browser.click
cleanup = []
step = "open"
try:
    driver.get(DEVICE)
    wait.until(lambda d: d.execute_script("return document.body.dataset.live") == "yes")
    visible("#home-screen")
    # A mark that a reload would wipe out.
    driver.execute_script("window.heraldMark = 'still the same page'")

    step = "prompt: Don't Allow"
    herald("device", "install", TEA)
    seen, out, err, status = answer_prompt(
        TEA, "#prompt-deny", [HERALD, "app", TEA, "authorize", "--options", "alert,sound,badge",
                              "--device-state", STATE])
    emit(step="deny", title=seen["title"], body=seen["body"], answer=out.strip(), status=status)

    step = "prompt: Allow"
    seen, out, err, status = answer_prompt(INVITES_APP, "#prompt-allow", [INVITES, "register"])
    token = out.strip().split("\n")[-1].split(" ")[-1]
    emit(step="allow", title=seen["title"], registered=out.strip().split("\n")[-1].startswith("Invites: token"),
         status=status, error=err.strip())

    step = "lock screen"
    click("#lock")
    visible("#lock-screen")
    push(DEMO_TOKEN, DEMO, {"aps": {"alert": {"title": "Hello", "body": "from Herald"}, "sound": "default",
                                    "badge": 1}})
    card = f'#lock-notifications .card[data-app="{DEMO}"]'
    visible(card)
    emit(step="lock", app=text(card + " .card-app"), title=text(card + " .card-title"),
         body=text(card + " .card-body"), foot=text(card + " .card-foot"),
         homeVisible=driver.find_element(By.ID, "home-screen").is_displayed())
    # Locking put the screen to sleep; the push lit it: the picture once it has.
    wait.until(lambda d: d.execute_script(
        "return document.body.dataset.awake === 'yes' && getComputedStyle(document.getElementById('sleep')).opacity === '0'"))
    shot("lock")

    step = "passcode"
    push(token, INVITES_APP, {"aps": {"alert": {"title": "You’re invited!", "body": "Breakfast"},
                                      "category": "INVITE_CATEGORY"}, "event": "Breakfast"})
    invite = f'#lock-notifications .card[data-app="{INVITES_APP}"]'
    visible(invite)
    click(invite + " .expand")
    lock_actions = [b.text for b in driver.find_elements(By.CSS_SELECTOR, invite + " .card-actions button")]
    click(invite + ' button[data-action="DECLINE_IDENTIFIER"]')
    # Decline needs authentication: the passcode sheet asks; with it, Decline runs (in the
    # background) and the device stays locked.
    reason = visible("#passcode-reason").text
    driver.find_element(By.ID, "passcode-input").send_keys("0000")
    click("#passcode-ok")
    wait.until_not(shown.visibility_of_element_located((By.ID, "passcode-layer")))
    wait.until(lambda d: not any(n["app"] == INVITES_APP for n in screen()["notifications"]))
    emit(step="passcode", actions=lock_actions, reason=reason, locked=screen()["locked"],
         lockVisible=driver.find_element(By.ID, "lock-screen").is_displayed())

    step = "home screen"
    click("#unlock")
    badge = f'#app-grid .app[data-app="{DEMO}"] .badge'
    visible(badge)
    emit(step="home", badge=text(badge), name=text(f'#app-grid .app[data-app="{DEMO}"] .app-name'),
         lockVisible=driver.find_element(By.ID, "lock-screen").is_displayed())
    shot("home")

    step = "open an app"
    click(f'#app-grid .app[data-app="{DEMO}"]')
    wait.until(lambda d: d.execute_script("return document.body.dataset.screen") == "app"
               and app_now(DEMO)["state"] == "foreground")
    front = text("#front-name")
    click("#go-home")
    wait.until(lambda d: d.execute_script("return document.body.dataset.screen") == "home")
    emit(step="open", front=front, after=app_now(DEMO)["state"])

    step = "sound files"
    bundle = tempfile.mkdtemp(prefix="herald-chime-")
    cleanup.append(bundle)
    chime(os.path.join(bundle, "chime.wav"))
    herald("device", "install", "dev.herald.chime", "--bundle-dir", bundle)
    answer_prompt("dev.herald.chime", "#prompt-allow",
                  [HERALD, "app", "dev.herald.chime", "authorize", "--device-state", STATE])
    herald("app", "dev.herald.chime", "add", "--id", "ring", "--title", "Chime", "--body", "Ding", "--sound",
           "chime.wav")
    wait.until(lambda d: len(sounds("dev.herald.chime")) == 1)
    herald("app", "dev.herald.chime", "add", "--id", "missing", "--title", "Chime", "--body", "Dong", "--sound",
           "missing.wav")
    wait.until(lambda d: len(sounds("dev.herald.chime")) == 2)
    emit(step="sounds", played=sounds("dev.herald.chime"))
    settled_banner("Dong")
    click("#banner .grabber")

    step = "banner"
    push(token, INVITES_APP, {"aps": {"alert": {"title": "You’re invited!", "body": "Team lunch on Friday"},
                                      "category": "INVITE_CATEGORY", "sound": "default"}, "event": "Team lunch"})
    settled_banner("Team lunch on Friday")
    click("#banner .card .expand")
    visible("#banner .card-actions")
    wait.until(lambda d: len(sounds(INVITES_APP)) == 1)
    emit(step="banner", title=text("#banner .card-title"),
         actions=[b.text for b in driver.find_elements(By.CSS_SELECTOR, "#banner .card-actions button")],
         sounds=sounds(INVITES_APP))
    shot("banner")
    click("#banner .grabber")

    step = "settings"
    click("#open-settings")
    click(f'#settings-apps .settings-row[data-app="{INVITES_APP}"]')
    visible("#settings-app")
    click("#settings-app .segments label:has(input[value='alert'])")
    wait.until(lambda d: setting(INVITES_APP, "alertStyle") == "alert")
    # As a person does: the next switch is turned once the page shows what the last one did.
    wait.until(lambda d: d.execute_script("return window.heraldSettled()"))
    click("#settings-app input[name='soundSetting']")
    wait.until(lambda d: setting(INVITES_APP, "soundSetting") == "disabled")
    settings = json.loads(subprocess.run(
        ["curl", "-sS", f"{DEVICE.rstrip('/')}/apps/{INVITES_APP}/settings"], check=True, capture_output=True,
        text=True).stdout)["settings"]
    emit(step="settings", alertStyle=settings["alertStyle"], soundSetting=settings["soundSetting"],
         checked=driver.find_element(By.CSS_SELECTOR, "#settings-app input[name='soundSetting']").is_selected())
    shot("settings")
    click("#close-settings")

    step = "alert"
    push(token, INVITES_APP, {"aps": {"alert": {"title": "You’re invited!", "body": "Dinner on Saturday"},
                                      "category": "INVITE_CATEGORY", "sound": "default"}, "event": "Dinner"})
    visible("#alert")
    buttons = driver.find_elements(By.CSS_SELECTOR, "#alert .alert-buttons button")
    log = json.loads(subprocess.run(["curl", "-sS", f"{DEVICE.rstrip('/')}/log?limit=20"], check=True,
                                    capture_output=True, text=True).stdout)
    presented = [e for e in log if e["kind"] == "presented" and e["app"] == INVITES_APP][-1]
    emit(step="alert", body=text("#alert .alert-text p"), buttons=[b.text for b in buttons],
         destructive=[b.text for b in buttons if "destructive" in b.get_attribute("class")],
         sounds=len(sounds(INVITES_APP)), presentedSound=presented["presentation"].get("sound"))
    shot("alert")
    click('#alert button[data-action="ACCEPT_IDENTIFIER"]')
    wait.until_not(shown.visibility_of_element_located((By.ID, "alert-layer")))

    step = "reply"
    herald("app", DEMO, "categories", "--category", "CHAT=reply+text")
    push(DEMO_TOKEN, DEMO, {"aps": {"alert": {"title": "Lunch?", "body": "Where are you?"}, "category": "CHAT"}})
    settled_banner("Where are you?")
    click("#banner .card .expand")
    click("#banner .card-actions button")
    field = visible("#banner .reply input")
    field.send_keys("On my way")
    click("#banner .reply button")
    wait.until(lambda d: not any(n["title"] == "Lunch?" for n in screen()["notifications"]))
    emit(step="reply", sent="On my way")
    wait.until(banner_put_away)

    step = "notification center"
    for body in ["Table for two", "At eight"]:
        push(DEMO_TOKEN, DEMO, {"aps": {"alert": {"title": "Dinner", "body": body}, "thread-id": "dinner"}})
    wait.until(lambda d: sum(n["threadIdentifier"] == "dinner" for n in screen()["notifications"]) == 2)
    settled_banner("At eight")
    click("#banner .grabber")
    click("#open-center")
    group = f'#center-groups .group[data-app="{DEMO}"][data-thread="dinner"]'
    visible(group)
    groups = [(g.get_attribute("data-app"), g.get_attribute("data-thread"),
               len(g.find_elements(By.CSS_SELECTOR, ".card")))
              for g in driver.find_elements(By.CSS_SELECTOR, "#center-groups .group")]
    shot("center")
    driver.find_element(By.CSS_SELECTOR, group + " .card .card-close").click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, group + " .card")) == 1)
    click("#clear-all")
    visible("#center-empty")
    emit(step="center", groups=groups, left=len(screen()["notifications"]))
    click("#close-center")

    step = "previews"
    click("#open-settings")
    click(f'#settings-apps .settings-row[data-app="{INVITES_APP}"]')
    wait.until(lambda d: d.execute_script("return window.heraldSettled()"))
    click("#settings-app .segments label:has(input[value='never'])")
    wait.until(lambda d: setting(INVITES_APP, "showPreviewsSetting") == "never")
    click("#close-settings")
    push(token, INVITES_APP, {"aps": {"alert": {"title": "Surprise party", "body": "Don't tell anyone"},
                                      "category": "INVITE_CATEGORY"}, "event": "Party"})
    visible("#alert")
    emit(step="previews", title=text("#alert .alert-text h3"), body=text("#alert .alert-text p"),
         page="Don't tell anyone" in driver.page_source)
    click("#alert button.close")

    step = "alert reply"
    subprocess.run(["curl", "-sS", "-X", "PATCH", "-d", '{"alertStyle":"alert"}',
                    f"{DEVICE.rstrip('/')}/apps/{DEMO}/settings"], check=True, capture_output=True)
    push(DEMO_TOKEN, DEMO, {"aps": {"alert": {"title": "Dinner?", "body": "Reply with a time"}, "category": "CHAT"}})
    form = '#alert form.reply[data-action="reply"]'
    visible(form)
    placeholder = driver.find_element(By.CSS_SELECTOR, form + " input").get_attribute("placeholder")
    send = driver.find_element(By.CSS_SELECTOR, form + " button").text
    driver.find_element(By.CSS_SELECTOR, form + " input").send_keys("At eight")
    click(form + " button")
    wait.until(lambda d: not any(n["title"] == "Dinner?" for n in screen()["notifications"]))
    emit(step="alert reply", placeholder=placeholder, send=send)

    step = "same page"
    emit(step="same page", mark=driver.execute_script("return window.heraldMark || null"))
except Exception as error:  # the step and the page's state say what went wrong
    browser.fail("web device", step, error, os.path.join(SHOTS, "web-device-failed.png"), html=6000)
finally:
    driver.quit()
    for directory in cleanup:
        shutil.rmtree(directory, ignore_errors=True)
