#!/usr/bin/env python3
"""Drives the push console of a running `herald up` in headless Chromium, the way a person uses it.

    console.py CONSOLE_URL SIGN_IN_LINK ADMIN_TOKEN P8_FILE DEVICE_API SHOTS
    console.py --drop SIGN_IN_LINK SHOTS GATEWAY_PID

CONSOLE_URL and SIGN_IN_LINK are what `herald up` printed; P8_FILE is the demo key's .p8 (the Send form
should already hold it); DEVICE_API is the device's API, read to see what the device was shown. Prints
one JSON object per step: a wrong token refused; the sign-in link; the form holding the demo key; a push
sent from the form (its answer, and the device showing it); its delivery log and history; a push with a
warning, named in Send; a bad payload named as it is typed; a fault rule added in the page, the next
push's answer and its rejected line in the log; the live counters; Apple's delivery states in the
Metrics view; the devices; cross-site posts
refused. With --drop: the live indicator, green, turning red when the event stream drops (the gateway,
GATEWAY_PID, gets SIGTERM; run it last). Saves console-*.png in SHOTS and exits 1
naming the step that failed. Needs Debian's chromium, chromium-driver and python3-selenium.
"""
import http.server
import json
import os
import signal
import sys
import tempfile
import threading
import sqlite3
import traceback
import urllib.error
import urllib.request

from browser import Browser, emit
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as shown
from selenium.webdriver.support.ui import Select

DROP = sys.argv[1] == "--drop"
if DROP:
    LINK, SHOTS, GATEWAY_PID = sys.argv[2], sys.argv[3], int(sys.argv[4])
    CONSOLE, TOKEN, P8, DEVICE_API = LINK.split("#", 1)[0], "", "", ""
else:
    CONSOLE, LINK, TOKEN, P8, DEVICE_API, SHOTS, DATABASE = sys.argv[1:8]
ADMIN = CONSOLE.rsplit("/console", 1)[0]
DEMO = "dev.herald.demo"


def typed(selector, value):
    field = visible(selector)
    field.clear()
    field.send_keys(value)


def rows(table):
    """A table's rows as lists of cell texts, read at once (the page re-renders its tables)."""
    return driver.execute_script(
        "return [...document.querySelectorAll(arguments[0] + ' tbody tr')]"
        ".map(r => [...r.cells].map(c => c.textContent))", table)


def row(table, containing):
    return next((r for r in rows(table) if any(containing in cell for cell in r)), None)


def shot(name):
    driver.save_screenshot(os.path.join(SHOTS, f"console-{name}.png"))


def admin(path):
    """The admin API with the bearer token, as curl or a script uses it."""
    request = urllib.request.Request(ADMIN + path, headers={"authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def shown_on_device():
    with urllib.request.urlopen(DEVICE_API + "/screen", timeout=10) as response:
        return [n["title"] for n in json.load(response)["notifications"]]


def tab(view):
    click(f'#tabs button[data-view="{view}"]')
    visible(f"#view-{view}")


def send_and_wait():
    """Clicks Send and waits for the answer; returns the status line."""
    before = text("#answer-fields") or ""
    click("#send")
    wait.until(lambda d: visible("#send-result") and text("#answer-fields") != before)
    return text("#answer-status")


class Attacker(http.server.BaseHTTPRequestHandler):
    """Another site's page: a form that posts a fault rule to the gateway into an iframe."""

    def do_GET(self):
        body = f"""<!doctype html><iframe name="sink" id="sink"></iframe>
<form method="POST" action="{ADMIN}/faults" target="sink" enctype="text/plain">
<input type="hidden" name='{{"reason":"BadDeviceToken","pad":"' value='"}}'></form>
<script>document.forms[0].submit()</script>""".encode()
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *arguments):
        pass


def forged(host):
    """Opens the attacker's page on `host`; returns what the gateway answered its post."""
    driver.get(f"http://{host}:{attacker.server_port}/")
    wait.until(lambda d: d.execute_script("return document.readyState") == "complete")
    frame = wait.until(shown.presence_of_element_located((By.ID, "sink")))
    driver.switch_to.frame(frame)
    wait.until(lambda d: d.find_element(By.TAG_NAME, "body").text.strip() != "")
    answer = driver.find_element(By.TAG_NAME, "body").text
    driver.switch_to.default_content()
    return answer


browser = Browser(window="1280,1000", extra=())
driver, wait = browser.driver, browser.wait
text, visible, click = browser.text, browser.visible, browser.click
attacker = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Attacker)
threading.Thread(target=attacker.serve_forever, daemon=True).start()
step = "wrong token"
try:
    if DROP:
        step = "stream dropped"
        driver.get(LINK)
        wait.until(lambda d: "ok" in (d.find_element(By.ID, "live-status").get_attribute("class") or ""))
        live = text("#live-status")
        os.kill(GATEWAY_PID, signal.SIGTERM)
        wait.until(lambda d: "fail" in (d.find_element(By.ID, "live-status").get_attribute("class") or ""))
        emit(step="dropped", live=live, status=text("#live-status"),
             color=driver.execute_script("return getComputedStyle(document.getElementById('live-status')).color"))
        shot("dropped")
        sys.exit(0)

    # A wrong token is refused, and nothing but the sign-in shows.
    driver.get(CONSOLE)
    typed("#signin-token", "not-the-token")
    click("#signin-button")
    wait.until(lambda d: text("#signin-error"))
    emit(step="wrong", error=text("#signin-error"), appHidden=driver.find_element(By.ID, "app").get_attribute("hidden") is not None)
    shot("signin")

    step = "sign-in link"
    driver.get(LINK)
    visible("#view-send")
    wait.until(lambda d: Select(d.find_element(By.ID, "key")).options)
    cookie = driver.get_cookie("herald_console") or {}
    emit(step="signin", url=driver.current_url, scriptSeesCookie=driver.execute_script("return document.cookie"),
         httpOnly=cookie.get("httpOnly"), sameSite=cookie.get("sameSite"))

    step = "send"
    # The demo app, its device and the demo key's .p8 are in the form already: `herald up` gave the
    # gateway the key, so a new user's first Send needs nothing found or pasted.
    with open(P8) as key_file:
        demo_key = key_file.read()
    prefilled = wait.until(lambda d: d.find_element(By.ID, "private-key").get_attribute("value") or False)
    emit(step="prefilled", same=prefilled.strip() == demo_key.strip())
    title = f"From the console {os.getpid()}"
    typed("#payload", json.dumps({"aps": {"alert": {"title": title, "body": "sent from the form"}, "sound": "default"}}))
    status = send_and_wait()
    answer = {node.get_attribute("id")[len("answer-"):]: node.text
              for node in driver.find_elements(By.CSS_SELECTOR, "#answer-fields dd")}
    wait.until(lambda d: title in shown_on_device())
    emit(step="send", status=status, answer=answer, app=Select(driver.find_element(By.ID, "app-select")).first_selected_option.text,
         curl=text("#curl"), herald=text("#herald"), title=title, device=shown_on_device())
    shot("send")

    step = "delivery log"
    click("#answer-log")
    visible("#view-log")

    def acknowledged(d):
        kinds = [li.get_attribute("class") for li in d.find_elements(By.CSS_SELECTOR, "#timeline li")]
        if "acknowledged" in kinds:
            return kinds
        click("#lookup-form button")  # its last lines land within 100 ms of the answer: look again
        return False
    kinds = wait.until(acknowledged)
    times = [node.text for node in driver.find_elements(By.CSS_SELECTOR, "#timeline time")]
    click("#history-filter button")
    history = wait.until(lambda d: row("#history", answer["apns-id"]))
    emit(step="log", lookup=driver.find_element(By.ID, "lookup").get_attribute("value"), kinds=kinds, times=times,
         history=history)
    shot("log")

    step = "warning"
    # A badge as a string: Apple answers 200 and leaves the badge as it was. The gateway says so.
    tab("send")
    typed("#payload", '{"aps":{"alert":"a badge in words","badge":"seven"}}')
    warned = send_and_wait()
    names = wait.until(lambda d: [li.get_attribute("data-warning")
                                  for li in d.find_elements(By.CSS_SELECTOR, "#send-warnings li")] or False)
    emit(step="warning", status=warned, warnings=names, text=text("#send-warnings"),
         header=text("#answer-herald-warnings"))
    driver.execute_script("document.getElementById('send-warnings').scrollIntoView({block: 'center'})")
    shot("warning")

    step = "bad payload"
    # Broken JSON is named as the user types, and Send sends nothing.
    answered = text("#answer-fields")
    typed("#payload", '{"aps":{"alert":"unfinished"')
    wait.until(lambda d: (text("#payload-error") or "").startswith("payload:"))
    click("#send")
    emit(step="bad", syntax=text("#payload-error"), unchanged=text("#answer-fields") == answered)

    step = "fault"
    tab("faults")
    typed("#fault-topic", DEMO)
    Select(driver.find_element(By.ID, "fault-reason")).select_by_value("Unregistered")
    typed("#fault-remaining", "1")
    typed("#fault-probability", "1")
    Select(driver.find_element(By.ID, "fault-connection")).select_by_value("goaway")
    click("#fault-add")
    rule_cells = wait.until(lambda d: row("#faults", "Unregistered"))
    shot("faults")
    tab("send")
    typed("#payload", json.dumps({"aps": {"alert": "answered by the fault rule"}}))
    faulted = send_and_wait()
    # The refused push is in the delivery log too, with what answered it.
    click("#answer-log")
    visible("#view-log")

    def rejected_line(d):
        line = next((li.text for li in d.find_elements(By.CSS_SELECTOR, "#timeline li.rejected")), None)
        if line:
            return line
        click("#lookup-form button")  # its line is written within 100 ms of the answer: look again
        return False
    rejected = wait.until(rejected_line)
    tab("send")
    after = send_and_wait()
    emit(step="fault", rule=rule_cells, faulted=faulted, after=after, rejected=rejected)

    step = "live"
    tab("live")

    def counted(d):
        answers = {r[0]: r[1] for r in rows("#totals") if len(r) == 2}
        # This run's answers: two 200s (the first push and the one after the rule) and the rule's 410.
        return answers if int(answers.get("200", 0)) >= 2 and "410 Unregistered" in answers else False
    totals = wait.until(counted)
    legends = driver.execute_script("return [...document.querySelectorAll('#legend-gauges li')].map(l => l.textContent)")
    emit(step="live", totals=totals, gauges=legends, status=text("#live-status"),
         statusClass=driver.find_element(By.ID, "live-status").get_attribute("class"))
    shot("live")

    step = "metrics"
    # Apple's delivery states by day: this run's pushes, as Apple's console would count them.
    tab("metrics")

    def states(d):
        click("#metrics-filter button")  # the last lines are written within 100 ms of the answers
        totals = {r[0]: r[-1] for r in rows("#metrics-table")}
        return totals if totals.get("Received by APNs") == "3" and totals.get("Discarded - Disabled") == "1" else False
    totals = wait.until(states)
    heads = driver.execute_script("return [...document.querySelectorAll('#metrics-table thead th')].map(c => c.textContent)")
    emit(step="metrics", totals=totals, heads=heads)
    shot("metrics")

    step = "devices"
    tab("devices")
    device = wait.until(lambda d: row("#devices", "online"))
    shot("devices")
    # The app's certificate, downloaded as a person does: one PEM file, certificate and key.
    downloads = tempfile.mkdtemp(prefix="herald-console-downloads-")
    driver.execute_cdp_cmd("Browser.setDownloadBehavior", {"behavior": "allow", "downloadPath": downloads})
    click("#apps tbody button")
    certificate = os.path.join(downloads, f"{DEMO}.pem")
    wait.until(lambda d: os.path.exists(certificate) and os.path.getsize(certificate) > 0)
    emit(step="devices", device=device, keys=rows("#keys"), apps=rows("#apps"), certificate=certificate)

    step = "cross-site"
    rules = len(admin("/faults"))
    cross_site = forged("localhost")       # another site: the browser sends no cookie
    same_site = forged("127.0.0.1")        # another origin on the same site: the cookie, but no CSRF token
    emit(step="forged", crossSite=cross_site, sameSite=same_site, rulesBefore=rules, rulesAfter=len(admin("/faults")))

    step = "unreadable"
    # A row of the delivery log that this release cannot read (damaged here; a newer release's would
    # be so too): the history lists the rest and says how many it left out, the push's own log says
    # why it cannot be shown.
    with sqlite3.connect(DATABASE, timeout=30) as db:
        damaged = db.execute("UPDATE event SET record = x'7B22FF' WHERE apnsID = ?", (answer["apns-id"],)).rowcount
    driver.get(CONSOLE)  # back from the other sites' pages, still signed in
    visible("#view-send")
    tab("log")
    click("#history-filter button")
    note = wait.until(lambda d: "could not be read" in (text("#history-note") or "") and text("#history-note"))
    listed = row("#history", answer["apns-id"]) is not None
    typed("#lookup", answer["apns-id"])
    click("#lookup-form button")
    timeline = wait.until(lambda d: "cannot read" in (text("#timeline") or "") and text("#timeline"))
    emit(step="unreadable", damaged=damaged, note=note, listed=listed, timeline=timeline)
    shot("unreadable")
except Exception:
    emit(step="failed", at=step, error=traceback.format_exc())
    shot("failed")
    sys.exit(1)
finally:
    driver.quit()
    attacker.shutdown()
