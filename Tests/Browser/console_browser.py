"""The ops console in a real browser: Debian's chromium, driven by Selenium through chromium-driver.

Run by Tests/ConsoleTests/ConsoleBrowserTests.swift, which starts a console over a fleet of its own
and passes what it set up in the environment:

  CONSOLE_URL, CONSOLE_TOKEN       where the console is, an operator token
  CONSOLE_OPERATOR                 and its name
  DEAD_LETTER_ID                   a dead letter whose subscription is not queued
  DEAD_LETTERS                     how many dead letters there are (more than a page, of four kinds)
  SEARCHED_LETTERS                 the ids of the three letters that say "Service Unavailable", comma-separated
  PASS_DUE, PASS_JOBS              the due and the jobs of each of night console-test's two passes (the first's
                                   all verified, the second's first dead: DEAD_LETTER_ID)
  ACCOUNT_ID                       an account id linked to the subscription below
  ORDER_ID, ORDER_SUBSCRIPTION_ID  an order id Apple's Look Up Order ID knows, and its subscription's id
  SUBSCRIPTION_ID, SUBSCRIPTION_OTID  the id and original_transaction_id of a subscription with events, a nightly
                                   job, a dead letter (apple.21002) and a check waiting for a time
  TIMED_CALLS, TIMED_JOBS_WEEK     verifyReceipt calls timed this minute; jobs timed this minute and a day ago
  STOPPED_WORKER                   a worker process stopped (SIGSTOP) holding one job, as the fleet names it
  STOPPED_SUBSCRIPTION             that job's subscription: SUBSCRIPTION_ID's
  LIVE_WORKER                      a worker process whose heartbeat is on time
  RECEIPTFLEET_BINARY              the receiptfleet binary, for `status --json`, `pause` and `resume`
  RECEIPTFLEET_*                   the fleet's settings, as every receiptfleet process reads them
  SCREENSHOTS                      where the screenshots go (one per page and width)

Every step asserts; the first that fails ends the run with its message and exit status 1.
"""
import json
import os
import subprocess
import sys

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException, WebDriverException
from selenium.webdriver.support.ui import WebDriverWait

URL = os.environ["CONSOLE_URL"].rstrip("/")
SHOTS = os.environ["SCREENSHOTS"]
WIDTHS = (1280, 375)


def cli(*arguments):
    """Runs a receiptfleet command, as an operator at a terminal would; returns what it printed."""
    out = subprocess.run([os.environ["RECEIPTFLEET_BINARY"], *arguments], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"receiptfleet {' '.join(arguments)} failed: {out.stderr}"
    return out.stdout


def status():
    """What `receiptfleet status --json` says, the command operators trust."""
    return json.loads(cli("status", "--json"))


def wait_for_gate(driver, prefix):
    """Waits for the overview's gate line to start with prefix (the page refreshes every 5 s)."""
    try:
        WebDriverWait(driver, 30, ignored_exceptions=(StaleElementReferenceException,)).until(
            lambda d: text(d, "gate").startswith(prefix))
    except TimeoutException:
        raise AssertionError(f"after 30 s the gate says {text(driver, 'gate')!r}, not {prefix!r}: the overview did not refresh")


def browser():
    options = webdriver.ChromeOptions()
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,900"):
        options.add_argument(argument)
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    driver = webdriver.Chrome(service=Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")), options=options)
    driver.set_page_load_timeout(30)
    return driver


def text(driver, element_id):
    return driver.find_element(By.ID, element_id).text.strip()


def submit(driver, button):
    """Clicks a form's button and waits for the page it leads to: a new document, which lacks the
    mark set on the old one, fully loaded. (Watching the old page's element go stale races with
    the navigation: chromium may answer that the node belongs to no document, as an error.)"""
    driver.execute_script("window.rfBeforeSubmit = true;")
    button.click()
    WebDriverWait(driver, 30, ignored_exceptions=(WebDriverException,)).until(
        lambda d: d.execute_script("return window.rfBeforeSubmit === undefined && document.readyState === 'complete';"))


def confirmed(driver, button, page, question, name, notice):
    """Clicks an action's button, whose page (page: replay or waiting) asks first, with a question that
    starts with question, at both widths (screenshots name); answers it, and checks the notice it ends with."""
    submit(driver, driver.find_element(By.ID, button))
    asked = text(driver, f"{page}-question")
    assert asked.startswith(question), asked
    check_layout(driver, name)
    submit(driver, driver.find_element(By.ID, f"confirm-{page}"))
    assert text(driver, "notice") == notice, text(driver, "notice")


def search_dead_letters(driver, words):
    """Types words into the dead letters' text search; returns the ids of the letters listed."""
    driver.get(URL + "/console/dead")
    driver.find_element(By.ID, "dead-text").send_keys(words)
    submit(driver, driver.find_element(By.ID, "filter-dead"))
    return [row.get_attribute("data-id") for row in driver.find_elements(By.CSS_SELECTOR, "#dead-letters li")]


def queue_line(driver, where):
    """A line of a subscription's "In the queue" list (where: waiting, dead, in hand): its place, reason or kind, detail."""
    row = driver.find_element(By.CSS_SELECTOR, f'#queue-jobs li[data-where="{where}"]')
    return [row.find_element(By.CSS_SELECTOR, f".{part}").text for part in ("kind", "muted", "message")]


def check_layout(driver, name, shown=None):
    """At each width: nothing wider than the screen (no horizontal scrolling), and a screenshot; of the
    element with the id shown, scrolled to at that width, when given."""
    for width in WIDTHS:
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600})
        if shown:
            driver.execute_script("document.getElementById(arguments[0]).scrollIntoView();", shown)
        overflow = driver.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth;")
        assert overflow <= 0, f"{name} at {width} px scrolls sideways by {overflow} px"
        driver.save_screenshot(os.path.join(SHOTS, f"{name}-{width}.png"))
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def main():
    os.makedirs(SHOTS, exist_ok=True)
    driver = browser()
    try:
        # A wrong token gets the login form back with the reason; an operator token gets in.
        driver.get(URL + "/console")
        assert driver.current_url.endswith("/console/login"), f"not sent to the login form: {driver.current_url}"
        check_layout(driver, "login")
        driver.find_element(By.ID, "token").send_keys("not-an-operator-token-at-all")
        submit(driver, driver.find_element(By.CSS_SELECTOR, "form.login button"))
        assert "not an operator token" in text(driver, "problem")
        driver.find_element(By.ID, "token").send_keys(os.environ["CONSOLE_TOKEN"])
        submit(driver, driver.find_element(By.CSS_SELECTOR, "form.login button"))
        assert driver.current_url.endswith("/console"), driver.current_url
        print("logged in")

        # The queue as `status --json` reads it.
        queue = status()["queue"]
        shown = {key: int(text(driver, f"queue-{key}")) for key in ("ready", "reserved", "delayed", "dead")}
        expected = {"ready": queue["ready"], "reserved": queue["reserved"],
                    "delayed": queue["delayedDue"] + queue["delayedLater"], "dead": queue["dead"]}
        assert shown == expected, f"the page shows {shown}, status --json {expected}"
        assert queue["ready"] > 0 and queue["dead"] == int(os.environ["DEAD_LETTERS"]), queue
        # The stopped worker, named as stopped on the overview, not as starved of CPU.
        stopped = os.environ["STOPPED_WORKER"]
        note = text(driver, f"silent-{stopped}")
        assert note.startswith(f"Worker {stopped} has not reported for ") and "stopped, frozen" in note, note
        assert not driver.find_elements(By.CSS_SELECTOR, '[id^="starved-"]'), "a stopped worker is called starved"
        check_layout(driver, "overview")
        print(f"the queue matches status --json: {shown}; {note}")

        # The queues one by one: the same dead letters as status --json, each ready stream's depth, and the
        # queued jobs by app, backend and priority.
        driver.get(URL + "/console/queues")
        rows = {row.get_attribute("id"): row for row in driver.find_elements(By.CSS_SELECTOR, "#queues tbody tr")}
        assert set(rows) == {"queue-high", "queue-normal", "queue-waiting", "queue-dead"}, set(rows)
        dead_cell = rows["queue-dead"].find_element(By.CSS_SELECTOR, "td.jobs").text
        assert dead_cell.replace(",", "") == str(queue["dead"]), f"the Queues page shows {dead_cell} dead letters, status --json {queue['dead']}"
        normal_cell = rows["queue-normal"].find_element(By.CSS_SELECTOR, "td.jobs").text
        assert int(normal_cell.replace(",", "")) == queue["ready"] - queue["readyHigh"], f"{normal_cell} ready at normal priority, status --json {queue}"
        groups = driver.find_elements(By.CSS_SELECTOR, "#queue-breakdown tbody tr")
        assert groups and all(row.get_attribute("data-app") for row in groups), "no breakdown by app and backend"
        assert text(driver, "breakdown-scope").startswith("Every job in the queue"), text(driver, "breakdown-scope")
        check_layout(driver, "queues")
        driver.get(URL + "/console")
        print(f"the queues: {normal_cell} ready at normal priority, {dead_cell} dead, {len(groups)} groups by app, backend and priority")

        # The history charts, with their axes and legends, over an hour and over a day.
        legend = [item.text for item in driver.find_elements(By.CSS_SELECTOR, "#jobs-chart .legend li")]
        assert legend == ["verified", "retried", "dead"], legend
        axis = [span.text for span in driver.find_elements(By.CSS_SELECTOR, "#jobs-chart .x-axis span")]
        assert len(axis) == 3 and axis[2] == "now", axis
        submit(driver, driver.find_element(By.LINK_TEXT, "last 24 hours"))
        assert driver.current_url.endswith("/console?window=24h"), driver.current_url
        caption = driver.find_element(By.CSS_SELECTOR, "#jobs-chart figcaption").text
        assert "last 24 hours" in caption and caption.endswith("each point is the average per minute over its 5 minutes"), caption
        depth = driver.find_element(By.CSS_SELECTOR, "#depth-chart figcaption").text
        assert depth.endswith("each point is the peak of the minute samples in its 5 minutes"), depth
        check_layout(driver, "overview-24h")
        driver.get(URL + "/console")
        print(f"history charts: {caption}")

        # The latest pass: its dead apart from its verified, in amber; never "done" while a job died.
        assert text(driver, "run-dead") == "1 dead", text(driver, "run")
        assert "paused" in driver.find_element(By.ID, "run").get_attribute("class"), "a pass with a dead job is not amber"
        print(f"the latest pass: {text(driver, 'run')}")
        # The table of passes by night: the night's totals, then a row per pass, latest first, at both widths.
        # Read in one script: the live overview replaces its rows every 5 s.
        rows = driver.execute_script(
            "return [...document.querySelectorAll('#passes tbody tr')].map(row =>"
            " [row.dataset.night || row.dataset.run, ...[...row.children].map(cell => cell.innerText.trim())]);")
        assert [row[0] for row in rows] == ["console-test", "console-test/2", "console-test/1"], rows
        night, second, first = (row[1:] for row in rows)
        due, jobs = os.environ["PASS_DUE"], int(os.environ["PASS_JOBS"])
        assert second[0] == "pass 2" and second[2:7] == [due, str(jobs), "0", "1", "0"] and second[7].startswith(f"{jobs - 1} to go, "), second
        assert first[0] == "pass 1" and first[2:7] == [due, str(jobs), str(jobs), "0", "0"] and first[7].endswith(" s"), first
        assert night[0] == "console-test: 2 passes" and night[2:7] == [due, str(2 * jobs), str(jobs), "1", "0"], night
        assert night[7].startswith(f"{jobs - 1} to go, "), night
        check_layout(driver, "passes", shown="passes")
        print(f"a night of two passes, each a row under the night's totals: {night[:7]}")

        # A form whose CSRF token is not the session's does nothing, and says so.
        driver.execute_script("document.querySelector('form[action=\"/console/gate/pause\"] input[name=csrf]').value = 'stale';")
        submit(driver, driver.find_element(By.ID, "pause"))
        assert text(driver, "error-title") == "This form is out of date", driver.page_source[:500]
        assert status()["queue"].get("haltedReason") is None, "a stale form halted the fleet"
        check_layout(driver, "stale-form")
        print("a stale form is refused")

        # Pause: the same halt as `receiptfleet pause`; resume asks first, then lifts it.
        driver.get(URL + "/console")
        reason = driver.find_element(By.ID, "reason")
        reason.clear()
        reason.send_keys("browser test")
        submit(driver, driver.find_element(By.ID, "pause"))
        halted = status()["queue"].get("haltedReason")
        assert halted == "browser test", f"status says halted: {halted!r}"
        assert text(driver, "gate").startswith("Halted: browser test"), text(driver, "gate")
        # The halt is a banner at the top of every page: who, since when, why, what next; the apps wait.
        banner = text(driver, "banner-fleet-what")
        assert banner.startswith(f"The fleet is halted by {os.environ['CONSOLE_OPERATOR']} (console) since "), banner
        assert "Waiting: the fleet is halted" in text(driver, "apps"), text(driver, "apps")
        assert not driver.find_elements(By.ID, "pause"), "pausing is not offered while the fleet is halted"
        check_layout(driver, "halt-banner")
        for page in ("dead", "subscriptions", "workers", "webhooks", "audit"):
            driver.get(URL + "/console/" + page)
            assert text(driver, "banner-fleet-why") == "Reason: browser test", page
        driver.get(URL + "/console")
        submit(driver, driver.find_element(By.ID, "resume"))
        assert "browser test" in text(driver, "halt-reason")
        assert text(driver, "halt-next").startswith("An operator paused it"), text(driver, "halt-next")
        assert "halts it again" not in text(driver, "halt-next"), "an operator's pause does not come back when resumed"
        check_layout(driver, "confirm-resume")
        assert status()["queue"].get("haltedReason") is not None, "resumed before the confirmation"
        submit(driver, driver.find_element(By.ID, "confirm-resume"))
        assert status()["queue"].get("haltedReason") is None, "still halted after resuming"
        assert text(driver, "gate").startswith("Open"), text(driver, "gate")
        print("paused and resumed")

        # Live refresh: a halt from the terminal shows on the open overview without reloading it.
        driver.execute_script("window.rfSameDocument = true;")
        cli("pause", "--reason", "from the terminal")
        wait_for_gate(driver, "Halted: from the terminal")
        cli("resume")
        wait_for_gate(driver, "Open")
        assert driver.execute_script("return window.rfSameDocument === true;"), "the page was reloaded, not refreshed in place"
        print("the overview refreshes itself")

        # Replay the dead letter: it leaves the dead letters and its job is queued.
        before = status()["queue"]
        driver.get(URL + "/console/dead")
        check_layout(driver, "dead-letters")
        kinds = {row.get_attribute("data-kind"): row.text for row in driver.find_elements(By.CSS_SELECTOR, "#dead-kinds tbody tr")}
        assert set(kinds) == {"apple.21010", "timeout", "http.503", "apple.21002"}, kinds
        assert text(driver, "dead-count") == f"The oldest 100 of {os.environ['DEAD_LETTERS']} dead letters, oldest first.", text(driver, "dead-count")
        # One compact line per letter at 1280 px and at 375 px: 100 of them take far less than the 3,540 px they took.
        heights = {}
        for width in WIDTHS:
            driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                   {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600})
            heights[width] = driver.execute_script("return [...document.querySelectorAll('#dead-letters li')].map(e => e.offsetHeight);")
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        for width, rows in heights.items():
            assert len(rows) == 100 and max(rows) <= 26 and sum(rows) <= 2_600, \
                f"at {width} px the 100 letters take {sum(rows)} px, the tallest {max(rows)} px"
        tallest = max(heights[375])
        submit(driver, driver.find_element(By.ID, "next-page"))
        assert text(driver, "dead-count").startswith(f"{int(os.environ['DEAD_LETTERS']) - 100} more of "), text(driver, "dead-count")
        check_layout(driver, "dead-letters-next")
        driver.get(URL + "/console/dead")
        print(f"dead letters by kind, one line each (100 take {sum(heights[1280])} px at 1280 px, {sum(heights[375])} px at 375 px), paged")
        # A letter opens in place on its details and its own buttons.
        row = driver.find_element(By.CSS_SELECTOR, f"li[data-id=\"{os.environ['DEAD_LETTER_ID']}\"]")
        row.find_element(By.TAG_NAME, "summary").click()
        assert "the account was not found" in row.find_element(By.CSS_SELECTOR, ".full-message").text, row.text
        check_layout(driver, "dead-letter-open")
        submit(driver, row.find_element(By.CSS_SELECTOR, "button.replay-one"))
        assert text(driver, "notice").startswith("Replayed 1 dead letter"), text(driver, "notice")
        after = status()["queue"]
        assert after["dead"] == before["dead"] - 1 and after["ready"] == before["ready"] + 1, f"{before} -> {after}"
        print("replayed a dead letter; it is queued")

        # The text search: only the letters that say so, whatever the case typed.
        searched = os.environ["SEARCHED_LETTERS"].split(",")
        found = search_dead_letters(driver, "service UNAVAILABLE")
        assert found == searched, f"the search found {found}, not the letters that say Service Unavailable: {searched}"
        assert text(driver, "dead-count") == "All 3 dead letters matching the filter, oldest first.", text(driver, "dead-count")
        check_layout(driver, "dead-letters-search", shown="dead-count")
        # Two of them ticked and replayed, after the page that says how many.
        before = status()["queue"]
        for letter in found[:2]:
            driver.find_element(By.CSS_SELECTOR, f'#dead-letters li[data-id="{letter}"] input[name="id"]').click()
        confirmed(driver, "replay-selected", "replay", "Replay 2 dead letters (the ticked ones)?", "confirm-replay-ticked",
                  "Replayed 2 dead letters: they are queued again.")
        after = status()["queue"]
        assert after["dead"] == before["dead"] - 2 and after["ready"] == before["ready"] + 2, f"{before} -> {after}"
        assert search_dead_letters(driver, "Service Unavailable") == searched[2:], "the replayed letters are still listed"
        # The one left ticked and purged, after its own page.
        driver.find_element(By.CSS_SELECTOR, f'#dead-letters li[data-id="{searched[2]}"] input[name="id"]').click()
        confirmed(driver, "purge-selected", "replay", "Purge 1 dead letter (the ticked ones)? They are deleted for good.",
                  "confirm-purge-ticked", "Purged 1 dead letter.")
        assert status()["queue"]["dead"] == after["dead"] - 1, "the purged letter is still counted"
        assert search_dead_letters(driver, "service unavailable") == [] and text(driver, "dead-count") == "No dead letters matching the filter.", \
            text(driver, "dead-count")
        print("found dead letters by their text; replayed two ticked, purged the third")

        # Look a subscription up by its original_transaction_id and see its events; verify it now.
        driver.get(URL + "/console/subscriptions")
        driver.find_element(By.ID, "q").send_keys(os.environ["SUBSCRIPTION_OTID"])
        submit(driver, driver.find_element(By.ID, "look-up"))
        events = [event.text for event in driver.find_elements(By.CSS_SELECTOR, "#events li strong")]
        assert events, "no events on the subscription's page"
        assert text(driver, "subscription-entitlement").startswith("active"), text(driver, "subscription-entitlement")
        check_layout(driver, "subscription")
        # What the queue holds for it: its nightly job, the job the stopped worker holds, the check waiting for a
        # time, its dead letter with a link to it.
        assert text(driver, "queue-summary") == "A job for it is queued:", text(driver, "queue-summary")
        in_hand = queue_line(driver, "in hand")
        assert in_hand[:2] == ["in hand", "notification"] and in_hand[2].startswith(f"held by {stopped}-"), in_hand
        waiting = queue_line(driver, "waiting")
        assert waiting[:2] == ["waiting", "notification"] and waiting[2].startswith("due ") and waiting[2].endswith(", not tried yet"), waiting
        dead = queue_line(driver, "dead")
        assert dead[:2] == ["dead", "apple.21002"] and dead[2].startswith("the receipt data was malformed (×1, "), dead
        link = driver.find_element(By.CSS_SELECTOR, '#queue-jobs li[data-where="dead"] a').get_attribute("href")
        assert link.endswith("/console/dead?subscription=" + os.environ["SUBSCRIPTION_ID"]), link
        check_layout(driver, "subscription-queue", shown="queue-jobs")
        submit(driver, driver.find_element(By.ID, "verify-now"))
        assert text(driver, "notice") == "Verified with Apple just now.", text(driver, "notice")
        print(f"looked up a subscription: {', '.join(events)}")

        # Support looks a customer up by their account id.
        driver.get(URL + "/console/subscriptions")
        driver.find_element(By.ID, "q").send_keys(os.environ["ACCOUNT_ID"])
        submit(driver, driver.find_element(By.ID, "look-up"))
        assert "/console/subscriptions/" in driver.current_url and text(driver, "subscription-title").startswith("Subscription "), driver.current_url
        print("looked a subscription up by its account id")

        # And by the order id a customer quotes from Apple's receipt email (Look Up Order ID).
        driver.get(URL + "/console/subscriptions")
        driver.find_element(By.ID, "q").send_keys(os.environ["ORDER_ID"])
        submit(driver, driver.find_element(By.ID, "look-up"))
        assert driver.current_url.endswith("/console/subscriptions/" + os.environ["ORDER_SUBSCRIPTION_ID"]), driver.current_url
        print("looked a subscription up by its order id")

        # The workers and what waits for a time; the audit trail of what was done above.
        driver.get(URL + "/console/workers")
        # The worker process stopped with SIGSTOP stays listed, marked silent, with the job it holds and
        # when its lease runs out; the live one beside it is not marked.
        row = driver.find_element(By.CSS_SELECTOR, f'#processes tr.silent[data-process="{stopped}"]')
        note = driver.find_element(By.CSS_SELECTOR, f'.silent-note[data-process="{stopped}"]')
        silent = note.text
        assert "Silent for " in silent and "stopped, frozen" in silent, silent
        assert "It holds 1 job, whose lease runs out within " in silent, silent
        for place in (row.find_elements(By.CSS_SELECTOR, ".in-hand a"), note.find_elements(By.TAG_NAME, "a")):
            held = [link.text for link in place]
            assert held == [os.environ["STOPPED_SUBSCRIPTION"]], f"the stopped worker holds {held}"
        live = driver.find_element(By.CSS_SELECTOR, f'#processes tr[data-process="{os.environ["LIVE_WORKER"]}"]')
        assert "silent" not in (live.get_attribute("class") or ""), "a live worker is marked silent"
        check_layout(driver, "workers")
        # On a phone too, the note is read whole, not scrolled to inside the table.
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {"width": 375, "height": 900, "deviceScaleFactor": 1, "mobile": True})
        right = driver.execute_script("return arguments[0].getBoundingClientRect().right;", note)
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        assert right <= 375, f"at 375 px the stopped worker's note ends at {right} px"
        print(f"a stopped worker stays listed with its job: {silent}")
        # A waiting job ticked and retried now, after the page that says how many.
        driver.find_element(By.CSS_SELECTOR, '#delayed input[name="job"][value^="6001|"]').click()
        confirmed(driver, "retry-waiting", "waiting", "Retry 1 waiting job now", "confirm-waiting", "1 waiting job retried now.")
        print("retried a waiting job from the workers page")
        # All the waiting jobs of a filter deleted, after the page that says how many.
        driver.find_element(By.NAME, "run").send_keys("browser-bulk")
        submit(driver, driver.find_element(By.ID, "filter-waiting"))
        assert "matching run browser-bulk: 1–3" in text(driver, "delayed-count"), text(driver, "delayed-count")
        check_layout(driver, "workers-filtered")
        confirmed(driver, "delete-all-waiting", "waiting", "Delete 3 waiting jobs matching run browser-bulk?", "confirm-waiting-all",
                  "3 waiting jobs deleted.")
        print("deleted all the waiting jobs of a run from the workers page")
        # A waiting job sent to the dead letters, after the page that says how many; there it is a letter of kind operator.
        before = status()["queue"]
        driver.find_element(By.CSS_SELECTOR, '#delayed input[name="job"][value^="6201|"]').click()
        confirmed(driver, "bury-waiting", "waiting", "Send 1 waiting job to the dead letters (subscriptions 6201)?", "confirm-bury",
                  "1 waiting job sent to the dead letters.")
        assert not driver.find_elements(By.CSS_SELECTOR, '#delayed input[value^="6201|"]'), "the buried job still waits"
        after = status()["queue"]
        assert after["dead"] == before["dead"] + 1, f"{before} -> {after}"
        submit(driver, driver.find_element(By.LINK_TEXT, "Dead letters"))
        submit(driver, driver.find_element(By.CSS_SELECTOR, '#dead-kinds tr[data-kind="operator"] a'))
        letters = driver.find_elements(By.CSS_SELECTOR, "#dead-letters li")
        assert [row.find_element(By.CSS_SELECTOR, ".subject").text for row in letters] == ["6201"], [row.text for row in letters]
        assert letters[0].find_element(By.CSS_SELECTOR, ".kind").text == "operator", letters[0].text
        message = letters[0].find_element(By.CSS_SELECTOR, ".message").text
        assert message == f"sent to the dead letters by {os.environ['CONSOLE_OPERATOR']}", message
        check_layout(driver, "dead-letters-operator")
        print("sent a waiting job to the dead letters; it is listed there as an operator's")
        driver.get(URL + "/console/audit")
        actions = [row.find_elements(By.TAG_NAME, "td")[2].text for row in driver.find_elements(By.CSS_SELECTOR, "#audit tbody tr")]
        expected = {"fleet.pause", "dead.replay", "dead.purge", "subscriptions.verify", "jobs.retry", "jobs.delete", "jobs.bury"}
        assert expected <= set(actions), f"the audit trail lacks {expected - set(actions)}: {actions}"
        check_layout(driver, "audit")
        print(f"the audit trail shows {len(actions)} actions")

        # An unknown subscription gets a page that says so.
        driver.get(URL + "/console/subscriptions?q=999999999")
        assert text(driver, "error-title") == "Not found"
        check_layout(driver, "not-found")

        # The fleet's timings: Apple per endpoint and jobs from first enqueue to done, over an hour and a week.
        driver.get(URL + "/console")
        submit(driver, driver.find_element(By.LINK_TEXT, "Timings"))
        assert driver.current_url.endswith("/console/timings"), driver.current_url
        calls = [cell.text for cell in driver.find_elements(By.CSS_SELECTOR, '#apple-timings tr[data-series="verify_receipt"] td')]
        assert calls[:2] == ["verify receipt", os.environ["TIMED_CALLS"]] and calls[2].endswith("ms"), calls
        endpoints = [row.get_attribute("data-series") for row in driver.find_elements(By.CSS_SELECTOR, "#apple-timings tbody tr")]
        assert endpoints == ["verify_receipt", "subscription_statuses"], f"the most called first: {endpoints}"
        caption = driver.find_element(By.CSS_SELECTOR, "#jobs-timing-chart figcaption").text
        assert caption.endswith("each point is the p50 and p99 of the jobs done in its minute"), caption
        bars = driver.find_elements(By.CSS_SELECTOR, "#jobs-distribution rect")
        assert bars, "no distribution of the jobs' times"
        check_layout(driver, "timings")
        submit(driver, driver.find_element(By.LINK_TEXT, "last 7 days"))
        jobs = [cell.text for cell in driver.find_elements(By.CSS_SELECTOR, '#job-timings tr[data-series="jobs"] td')]
        assert jobs[1] == os.environ["TIMED_JOBS_WEEK"] and jobs[3].endswith(" h"), f"a week holds yesterday's slow jobs: {jobs}"
        check_layout(driver, "timings-7d")
        print(f"timings: verifyReceipt {calls[1:]}, jobs over a week {jobs[1:]}")

        driver.get(URL + "/console/webhooks")
        assert driver.find_elements(By.CSS_SELECTOR, "section.endpoint"), "no webhook endpoint listed"
        check_layout(driver, "webhooks")
        print("every page fits 1280 px and 375 px without sideways scrolling")
    except AssertionError as failure:
        driver.save_screenshot(os.path.join(SHOTS, "failure.png"))
        print(f"FAILED at {driver.current_url}: {failure}", file=sys.stderr)
        return 1
    finally:
        driver.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
