"""The dashboard in a real headless Chromium (Debian's chromium and chromium-driver).

Skipped only when Chromium is missing outside CI; under CI=true (``.ci/run`` installs it)
a missing browser fails the test.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest
from support.cli import run_cli
from support.dashboard import TOKEN, served
from support.machine import within

from cloudbroker import api
from cloudbroker.web.pages import REFRESH

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


@pytest.fixture
def world(tmp_path, monkeypatch, clean_env):
    running = served(tmp_path, quote=api.quote)
    monkeypatch.setattr("cloudbroker.plugins.load", lambda **kwargs: running.pm)
    yield running
    running.server.close()


def status_json(world, pid: str, env) -> dict:
    result = run_cli("status", pid, "--json", "--state", str(world.state), env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


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


def read_row(browser, selector: str) -> dict[str, str]:
    """The texts of a placement row's cells by class, read in one script: the page's own
    refresh (every REFRESH seconds) cannot replace the row between two reads."""
    return browser.execute_script(
        "const row = document.querySelector(arguments[0]);"
        "return Object.fromEntries(['status', 'primary', 'standby', 'spend']"
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


def test_pages_show_the_store_as_status_json_does_and_a_failover_within_a_refresh(
    browser, world, clean_env, tmp_path
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    env = {**clean_env, "CLOUDBROKER_CONFIG": str(tmp_path / "none.toml")}
    browser.get(world.server.url)
    for pid in world.placements:
        said = status_json(world, pid, env)
        row = read_row(browser, f'tr[data-placement="{pid}"]')
        for column in ("status", "primary", "standby"):
            assert row[column] == said[column]
        total = f"{float(said['spend']['total']['amount']):,.2f} USD"
        assert row["spend"].startswith(total)
        assert TOKEN not in browser.page_source
    shots(browser, "placements", tmp_path)

    pid = world.placements[0]
    browser.get(f"{world.server.url}placements/{pid}")
    said = status_json(world, pid, env)
    shown = [  # read in one script: the page's refresh cannot replace the rows mid-read
        tuple(row)
        for row in browser.execute_script(
            "return [...document.querySelectorAll('table.instances tr[data-instance]')]"
            ".map(r => [r.querySelectorAll('td')[2].innerText,"
            " r.querySelector('.state').innerText]);"
        )
    ]
    assert shown == [(i["instance_id"], i["state"]) for i in said["instances"]]
    assert browser.find_element(By.CSS_SELECTOR, 'svg[aria-label="spend against budget"]')
    shots(browser, "placement", tmp_path)

    # the failover through the page: the token and the typed id, then the page's own refresh
    request_failover(browser, pid)
    WebDriverWait(browser, within(20)).until(lambda d: "failover requested" in d.page_source)
    deadline = time.monotonic() + within(30)
    while world.broker.store.placement(pid).primary_side == "a":
        assert time.monotonic() < deadline, "the failover did not complete"
        time.sleep(0.1)
    done = time.monotonic()
    loaded = within(5)  # a page load, on this machine
    WebDriverWait(browser, REFRESH + loaded).until(  # one refresh (plus a load) after it ended
        lambda d: d.find_element(By.CSS_SELECTOR, "b.primary").text == "ten"
    )
    assert time.monotonic() - done <= REFRESH + loaded
    last = status_json(world, pid, env)["last_failover"]
    timeline = browser.find_element(By.CSS_SELECTOR, "table.timeline").text
    assert f"RTO {last['rto_seconds']:.1f} s" in timeline
    assert TOKEN not in browser.page_source

    browser.get(f"{world.server.url}watchers")
    assert "watchers and leases" in browser.title
    browser.get(f"{world.server.url}quote?gpu=A100&count=8&hours=72")
    best = api.quote(gpu="A100", count=8, hours=72).quotes[0]
    first = browser.find_elements(By.CSS_SELECTOR, "table.quotes tr")[1]
    cells = [td.text for td in first.find_elements(By.TAG_NAME, "td")]
    assert cells[:3] == ["1", best.provider, best.instance_type]
    assert first.find_element(By.CSS_SELECTOR, 'svg[aria-label="cost breakdown"]')
    shots(browser, "quote", tmp_path)
    assert TOKEN not in browser.page_source
