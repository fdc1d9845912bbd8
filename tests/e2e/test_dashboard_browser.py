"""The dashboard in a real headless Chromium (Debian's chromium and chromium-driver), on the
sandbox: ``cloudbroker serve`` as a process of its own, over two placements brought up on the
sandbox's Aliyun and Tencent emulators, its numbers compared with ``status --json``.

Skipped only when Chromium is missing outside CI; under CI=true (``.ci/run`` installs it)
a missing browser fails the test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest
from support.cli import run_process
from support.machine import within

from cloudbroker.web.pages import REFRESH
from cloudbroker.web.server import TOKEN_ENV

CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)

pytestmark = pytest.mark.slow
#: Read before any fixture cleans the environment: where to keep the screenshots, and CI.
KEEP = os.environ.get("CLOUDBROKER_SCREENSHOTS")
IN_CI = bool(os.environ.get("CI"))


@pytest.fixture
def browser(tmp_path):
    have = Path(CHROMIUM).exists() and Path(DRIVER).exists()
    if not have:
        if IN_CI:
            pytest.fail(f"CI needs {CHROMIUM} and {DRIVER} (.ci/run installs them)")
        pytest.skip("chromium and chromium-driver are not installed")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    profile = tmp_path / "chromium-profile"  # a fresh one: no state from another run
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(options=options, service=Service(DRIVER))
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


TOKEN = "dash-T0KEN-never-shown"
CENT = Decimal("0.01")


@dataclass
class Sandbox:
    """The sandbox's environment, its placements and the dashboard's address."""

    env: dict[str, str]
    placements: list[str]
    url: str = ""

    def cli(self, *argv: str) -> str:
        done = run_process(*argv, env=self.env, timeout=within(120))
        assert done.returncode == 0, f"{argv}: {done.stderr}"
        return done.stdout

    def status(self, pid: str) -> dict:
        return json.loads(self.cli("status", pid, "--json"))


@pytest.fixture
def sandbox(clean_env, tmp_path):
    """Two placements up on the sandbox's Aliyun (primary) and Tencent (standby), budgets of
    1000 USD, and ``cloudbroker serve`` (the token from the environment) on a free port."""
    home, where = tmp_path / "home", tmp_path / "sandbox"
    home.mkdir()
    env = {**clean_env, "HOME": str(home)}
    up = run_process("sandbox", "up", "--dir", str(where), "--json", env=env, timeout=within(120))
    assert up.returncode == 0, up.stderr
    box = Sandbox({**env, **json.loads(up.stdout)}, [])
    serving = None
    try:
        for n in range(2):
            placed = box.cli(
                "place", "--gpu", "A100", "--count", "8", "--hours", "10",
                "--primary", "aliyun", "--standby", "tencent", "--budget", "1000USD",
                "--bucket", f"aliyun:ckpt/r{n}", "--standby-bucket", f"tencent:ckpt/r{n}",
                "--json",
            )  # fmt: skip
            box.placements.append(json.loads(placed)["id"])
            box.cli("up", box.placements[-1], "--yes")
        log = tmp_path / "serve.log"
        with log.open("w") as out:
            serving = subprocess.Popen(
                [sys.executable, "-m", "cloudbroker", "serve", "--port", "0"],
                env={**box.env, TOKEN_ENV: TOKEN}, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + within(60)
        while not (found := re.search(r"dashboard at (http://\S+)", log.read_text())):
            assert serving.poll() is None, log.read_text()
            assert time.monotonic() < deadline, "serve did not say its address"
            time.sleep(0.1)
        box.url = found.group(1).rstrip("/") + "/"
        yield box
    finally:
        if serving is not None:
            serving.terminate()
            serving.wait(timeout=within(30))
        run_process("sandbox", "down", "--dir", str(where), env=env, timeout=within(120))


def shots(driver, name: str, tmp_path: Path) -> None:
    """Screenshots at 1280 and 390 px wide (kept in $CLOUDBROKER_SCREENSHOTS if set); at
    390 px the page must not scroll sideways (wide tables scroll inside their box)."""
    keep = Path(KEEP or tmp_path)
    keep.mkdir(parents=True, exist_ok=True)
    for width in (1280, 390):
        driver.set_window_size(width, 900)
        time.sleep(0.2)
        assert driver.save_screenshot(str(keep / f"{name}-{width}.png"))
        overflow = driver.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 1, f"{name} scrolls sideways at {width} px by {overflow} px"
    driver.set_window_size(1280, 900)


def read_page(browser, script: str, *args: object):
    """What ``script`` reads of the page, in one script (the page's own refresh, every
    REFRESH seconds, cannot replace it between two reads). A page still loading, or being
    replaced by its refresh on a busy machine, shows nothing yet: read again, within a bound
    that prints the page."""
    deadline = time.monotonic() + within(10)
    while not (found := browser.execute_script(script, *args)):
        assert time.monotonic() < deadline, f"{script} found nothing: {browser.page_source}"
        time.sleep(0.2)
    return found


def read_row(browser, selector: str) -> dict[str, str]:
    """The texts of a placement row's cells by class."""
    return read_page(
        browser,
        "const row = document.querySelector(arguments[0]);"
        "return row && Object.fromEntries(['status', 'primary', 'standby', 'spend']"
        ".map(c => [c, row.querySelector('.' + c).innerText]));",
        selector,
    )


def request_failover(browser, pid: str) -> None:
    """Type the token and the placement's id into its failover form and press the button. The
    page's own refresh may replace the form while a busy machine types: then type it again."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    for _ in range(5):
        try:
            form = browser.find_element(
                By.CSS_SELECTOR, f'form[action="/placements/{pid}/failover"]'
            )
            form.find_element(By.NAME, "token").send_keys(TOKEN)
            form.find_element(By.NAME, "confirm").send_keys(pid)
            form.find_element(By.TAG_NAME, "button").click()
            return
        except StaleElementReferenceException:
            continue
    raise AssertionError("each time, the page refreshed before its failover form was sent")


def test_pages_show_the_sandbox_as_status_json_does_and_a_failover_within_a_refresh(
    browser, sandbox, tmp_path
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    # the instances bill while the test reads: the page's spend lies between a status read
    # before the page and one after it
    before = {pid: sandbox.status(pid) for pid in sandbox.placements}
    browser.get(sandbox.url)
    rows = {pid: read_row(browser, f'tr[data-placement="{pid}"]') for pid in sandbox.placements}
    for pid, row in rows.items():
        after = sandbox.status(pid)
        for column in ("status", "primary", "standby"):
            assert row[column] == before[pid][column] == after[column]
        shown = Decimal(row["spend"].split(" USD", 1)[0].replace(",", ""))
        assert spent(before[pid]) - CENT / 2 <= shown <= spent(after) + CENT / 2, row["spend"]
        assert row["spend"].endswith("of 1,000.00 USD (0 %)")
    assert TOKEN not in browser.page_source
    shots(browser, "placements", tmp_path)

    pid = sandbox.placements[0]
    browser.get(f"{sandbox.url}placements/{pid}")
    said = sandbox.status(pid)
    rows = [
        tuple(row)
        for row in read_page(
            browser,
            "return [...document.querySelectorAll('table.instances tr[data-instance]')]"
            ".map(r => [r.querySelectorAll('td')[2].innerText,"
            " r.querySelector('.state').innerText]);",
        )
    ]
    assert rows == [(i["instance_id"], i["state"]) for i in said["instances"]]
    assert rows and {state for _, state in rows} == {"running"}  # the primary runs
    assert browser.find_element(By.CSS_SELECTOR, 'svg[aria-label="spend against budget"]')
    shots(browser, "placement", tmp_path)

    # the failover through the page: the token and the typed id; serve fails over on the
    # emulated clouds, and the page's own refresh shows Tencent as the primary
    request_failover(browser, pid)
    WebDriverWait(browser, within(20)).until(lambda d: "failover requested" in d.page_source)
    deadline = time.monotonic() + within(120)
    while sandbox.status(pid)["primary"] == "aliyun":
        assert time.monotonic() < deadline, "the failover did not complete"
        time.sleep(0.5)
    done = time.monotonic()
    loaded = within(5)  # a page load, on this machine
    WebDriverWait(browser, REFRESH + loaded).until(  # one refresh (plus a load) after it ended
        lambda d: d.find_element(By.CSS_SELECTOR, "b.primary").text == "tencent"
    )
    assert time.monotonic() - done <= REFRESH + loaded
    last = sandbox.status(pid)["last_failover"]
    timeline = browser.find_element(By.CSS_SELECTOR, "table.timeline").text
    assert f"RTO {last['rto_seconds']:.1f} s" in timeline
    assert TOKEN not in browser.page_source
    other = read_row_after_load(browser, sandbox.url, sandbox.placements[1])
    assert other["primary"] == "aliyun"  # the other placement did not move

    browser.get(f"{sandbox.url}watchers")
    assert "watchers and leases" in browser.title
    browser.get(f"{sandbox.url}quote?gpu=A100&count=8&hours=72")
    best = json.loads(sandbox.cli("quote", "--gpu", "A100", "--count", "8", "--hours", "72",
                                  "--json"))["quotes"][0]  # fmt: skip
    first = browser.find_elements(By.CSS_SELECTOR, "table.quotes tr")[1]
    cells = [td.text for td in first.find_elements(By.TAG_NAME, "td")]
    assert cells[:3] == ["1", best["provider"], best["instance_type"]]
    assert first.find_element(By.CSS_SELECTOR, 'svg[aria-label="cost breakdown"]')
    shots(browser, "quote", tmp_path)
    assert TOKEN not in browser.page_source


def spent(status: dict) -> Decimal:
    total = status["spend"]["total"]
    assert total["currency"] == "USD"
    return Decimal(total["amount"])


def read_row_after_load(browser, url: str, pid: str) -> dict[str, str]:
    browser.get(url)
    return read_row(browser, f'tr[data-placement="{pid}"]')
