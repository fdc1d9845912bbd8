"""``cloudbroker serve``: pages from the store, the token, the confirmed actions (over HTTP)."""

from __future__ import annotations

import time
import urllib.error
import urllib.parse
import urllib.request

import pytest
from support.cli import one_line, run_cli
from support.dashboard import TOKEN, served

from cloudbroker.errors import UsageError
from cloudbroker.web import Dashboard, serve
from cloudbroker.web.charts import spend_points


def get(url: str, token: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def post(url: str, form: dict[str, str]) -> int:
    body = urllib.parse.urlencode(form).encode()
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(urllib.request.Request(url, data=body), timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@pytest.fixture
def world(tmp_path):
    running = served(tmp_path)
    yield running
    running.server.close()


def test_the_index_lists_every_placement_with_roles_spend_and_no_token(world):
    status, html = get(world.server.url)
    assert status == 200
    for pid in world.placements:
        assert f'data-placement="{pid}"' in html
        spent = world.broker.spend(pid)
        assert f"{spent.total.amount:,.2f} USD of 100.00 USD" in html
    assert '<td class="primary">ali</td>' in html and '<td class="standby">ten</td>' in html
    assert TOKEN not in html
    assert 'http-equiv="refresh"' in html  # a failover shows within one refresh


def test_a_placement_page_has_its_instances_chart_and_a_failover_with_rto_and_rpo(world):
    pid = world.placements[0]
    world.broker.failover(pid, "manual")
    status, html = get(f"{world.server.url}placements/{pid}")
    assert status == 200
    last = world.broker.status(pid, refresh=False).last_failover
    assert f"RTO {last.rto_seconds:.1f} s" in html
    assert 'aria-label="spend against budget"' in html and "budget 100.00 USD" in html
    assert "<td>former primary</td><td>ali</td>" in html
    assert '<b class="primary">ten</b>' in html
    assert TOKEN not in html


def test_actions_need_the_token_and_the_typed_placement_id(world):
    pid = world.placements[1]
    action = f"{world.server.url}placements/{pid}/failover"
    assert post(action, {"confirm": pid}) == 403
    assert post(action, {"token": "wrong", "confirm": pid}) == 403
    assert post(action, {"token": TOKEN, "confirm": "yes"}) == 400
    assert world.broker.store.placement(pid).primary_side == "a"  # nothing happened
    assert post(action, {"token": TOKEN, "confirm": pid}) == 303
    deadline = time.monotonic() + 20
    while world.broker.store.placement(pid).primary_side == "a":
        assert time.monotonic() < deadline, "the failover did not complete"
        time.sleep(0.1)
    _, html = get(f"{world.server.url}placements/{pid}")
    assert "roles-swapped" in html


def test_without_a_token_there_are_no_actions(tmp_path):
    running = served(tmp_path, token=None, count=1)
    try:
        pid = running.placements[0]
        _, html = get(f"{running.server.url}placements/{pid}")
        assert "<h2>actions</h2>" not in html
        assert post(f"{running.server.url}placements/{pid}/down", {"confirm": pid}) == 403
    finally:
        running.server.close()


def test_another_address_needs_a_token_and_then_every_page_does(world):
    board = Dashboard(world.broker, None, open_reads=False)
    with pytest.raises(UsageError, match="is not loopback: a token is required"):
        serve(board, 0, "0.0.0.0")
    closed = serve(Dashboard(world.broker, TOKEN, open_reads=False), 0)
    try:
        assert get(closed.url)[0] == 401
        assert get(closed.url, "wrong")[0] == 401
        status, html = get(closed.url, TOKEN)
        assert status == 200 and world.placements[0] in html and TOKEN not in html
    finally:
        closed.close()


def test_an_unknown_placement_is_a_404_page(world):
    status, html = get(f"{world.server.url}placements/pl-nope")
    assert status == 404 and "unknown placement" in html


def test_the_spend_chart_ends_at_the_guards_total(world):
    from cloudbroker.broker.budget import charges, spend

    pid = world.placements[0]
    placement = world.broker.store.placement(pid)
    now = time.time()
    points = spend_points(charges(world.broker.store, placement, now=now), 0.0, now)
    guard = spend(world.broker.store, placement, now=now)
    assert abs(points[-1][1] - guard.total.amount) < 1e-9
    assert [v for _, v in points] == sorted(v for _, v in points)  # never goes down


@pytest.fixture
def env(clean_env, tmp_path):
    return {**clean_env, "CLOUDBROKER_CONFIG": str(tmp_path / "none.toml")}


def test_serve_refuses_another_address_without_a_token_and_an_empty_token_file(
    env, tmp_path, world
):
    state = str(world.state)
    served_on = ("serve", "--address", "0.0.0.0", "--port", "0", "--state", state)
    line = one_line(run_cli(*served_on, env=env))
    assert "is not loopback: a token is required" in line
    empty = tmp_path / "token"
    empty.write_text("\n")
    line = one_line(run_cli("serve", "--token-file", str(empty), "--state", state, env=env))
    assert "--token-file is empty" in line


def test_the_token_comes_from_its_file_or_the_environment_never_argv(tmp_path, monkeypatch):
    from cloudbroker.api.serve import dashboard_token

    monkeypatch.delenv("CLOUDBROKER_DASHBOARD_TOKEN", raising=False)
    assert dashboard_token(None) is None
    monkeypatch.setenv("CLOUDBROKER_DASHBOARD_TOKEN", " from-env \n")
    assert dashboard_token(None) == "from-env"
    kept = tmp_path / "token"
    kept.write_text("from-file\n")
    assert dashboard_token(str(kept)) == "from-file"


def test_a_plan_this_version_cannot_price_still_shows(world):
    spec = dict(world.broker.store.placement(world.placements[0]).plan)
    del spec["cost"]
    world.broker.store.add_placement("pl-other", spec)
    status, html = get(world.server.url)
    assert status == 200 and "pl-other" in html and "not priced" in html
    status, html = get(f"{world.server.url}placements/pl-other")
    assert status == 200 and "not priced" in html
