#!/usr/bin/env python3
"""Live Activities on the web device's lock screen, seen in headless Chromium as a person sees them.

    web_activities.py DEVICE_URL HERALD DEVICE_STATE APP SHOTS

DEVICE_URL is the page `herald up` printed, HERALD the herald executable, DEVICE_STATE the device's
state directory, APP an installed app (the demo). The app's activity is started, updated and ended
with `herald app` (the page is never reloaded: it follows the device's log). One JSON line per step:
the card as it first shows, after an update, ended with a dismissal an hour away, and a second one
ended at once (gone). Saves web-device-activity.png in SHOTS; exits 1 naming the step that failed.
Needs Debian's chromium, chromium-driver and python3-selenium.
"""
import json
import os
import subprocess
import sys
import time
import traceback
import urllib.request

from browser import Browser, emit
from selenium.webdriver.common.by import By

DEVICE, HERALD, STATE, APP, SHOTS = sys.argv[1:6]


def app(*arguments):
    return subprocess.run([HERALD, "app", APP, *arguments, "--device-state", STATE], check=True,
                          capture_output=True, text=True, timeout=30).stdout.strip()


def card(activity):
    return f'.activity-card[data-activity="{activity}"]'


browser = Browser(window="430,900")
driver, wait = browser.driver, browser.wait
text, visible = browser.text, browser.visible
step = "open"
try:
    driver.get(DEVICE)
    wait.until(lambda d: d.execute_script("return document.body.dataset.live") == "yes")
    request = urllib.request.Request(DEVICE.rstrip("/") + "/lock", data=b'{"locked":true}', method="PUT")
    urllib.request.urlopen(request, timeout=10).read()
    visible("#lock-screen")

    step = "started"
    started = app("activity-start", "--attributes-type", "DeliveryAttributes", "--attributes", '{"order":"A-17"}',
                  "--content-state", '{"stop":5,"eta":"12:40"}', "--push-type", "none")
    first = started.split(" ")[0]
    visible(card(first))
    emit(step="started", app=text(card(first) + " .card-app"),
         attributes=text(card(first) + " .activity-attributes"), state=text(card(first) + " .activity-state"),
         onLockScreen=driver.execute_script(
             "return document.querySelector(arguments[0]).closest('#lock-screen') !== null", card(first)))

    step = "updated"
    app("activity-update", first, "--content-state", '{"stop":2,"eta":"12:25"}', "--relevance-score", "50")
    wait.until(lambda d: text(card(first) + " .activity-state") == "eta 12:25 · stop 2")
    # Locked, the screen went dark; a person taps it to look (an update without an alert does not
    # light it).
    driver.find_element(By.ID, "lock-time").click()
    wait.until(lambda d: d.execute_script(
        "return document.body.dataset.awake === 'yes' && getComputedStyle(document.getElementById('sleep')).opacity === '0'"))
    driver.save_screenshot(os.path.join(SHOTS, "web-device-activity.png"))
    emit(step="updated", state=text(card(first) + " .activity-state"))

    step = "alert"
    # Unlocked, an update's alert is a banner (locked, the card itself is the alert).
    request = urllib.request.Request(DEVICE.rstrip("/") + "/lock", data=b'{"locked":false}', method="PUT")
    urllib.request.urlopen(request, timeout=10).read()
    app("activity-update", first, "--content-state", '{"stop":1,"eta":"12:20"}', "--title", "Almost there",
        "--body", "One stop left", "--sound", "default")
    visible(f'#banner .activity-alert[data-activity="{first}"]')
    emit(step="alert", title=text("#banner .card-title"), body=text("#banner .card-body"),
         sounds=driver.execute_script("return window.heraldSounds.map(s => s.sound)"))
    request = urllib.request.Request(DEVICE.rstrip("/") + "/lock", data=b'{"locked":true}', method="PUT")
    urllib.request.urlopen(request, timeout=10).read()
    visible("#lock-screen")

    step = "ended"
    app("activity-end", first, "--dismissal", str(int(time.time()) + 3600))
    # Read in one script: the list is rebuilt on every change, so an element found earlier goes stale.
    wait.until(lambda d: d.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.dataset.state : null", card(first)) == "ended")
    emit(step="ended", badge=text(card(first) + " .activity-badge"), foot=text(card(first) + " .card-foot"))

    step = "dismissed"
    second = app("activity-start", "--attributes-type", "Timer", "--content-state", '{"left":3}',
                 "--push-type", "none").split(" ")[0]
    visible(card(second))
    app("activity-end", second, "--dismissal", "immediate")
    wait.until(lambda d: d.execute_script("return document.querySelector(arguments[0]) === null", card(second)))
    emit(step="dismissed", cards=driver.execute_script("return document.querySelectorAll('.activity-card').length"))
except Exception:
    print(f"step {step} failed", file=sys.stderr)
    traceback.print_exc()
    sys.exit(1)
finally:
    browser.driver.quit()
