"""docs/api.md: the guide's examples run as written, and the reference matches the code.

Each ``python`` block of a guide section runs, in order, in one namespace, exactly as a
reader would paste it: the quote and sizing examples on the packaged catalogs, the scheduler
on in-process fake clouds (the only change: ``load_plugins`` and the rclone replicator give
the fakes), the sync example against two local S3 servers with the real rclone (slow).
"""

from __future__ import annotations

import doctest
import inspect
import re
from pathlib import Path

import pytest
from support.broker_fakes import FakeReplicator, fake_world

import cloudbroker
from cloudbroker import api
from cloudbroker.models import BucketRef

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "api.md"
TEXT = GUIDE.read_text(encoding="utf-8")
HEADING = re.compile(r"^#{3,4} `(?P<name>[\w.]+)(?P<rest>.*)`$", re.M)


def blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.M | re.S)


def section(title: str) -> str:
    """The text of the guide's ``### title`` section."""
    guide = TEXT.split("\n## Guide\n", 1)[1].split("\n## ", 1)[0]
    [found] = [s for s in guide.split("\n### ") if s.startswith(title)]
    return found


def run(code: str, namespace: dict) -> dict:
    exec(compile(code, str(GUIDE), "exec"), namespace)  # the guide's own code
    return namespace


def test_the_introduction_and_the_notebook_examples_run(clean_env, capsys):
    namespace = run(blocks(TEXT.split("\n## ", 1)[0])[0], {})
    assert namespace["best"] is namespace["result"].quotes[0]
    notebook, sized, errors = blocks(section("Quote inside a notebook"))
    run(notebook, namespace)
    result, rows = namespace["result"], namespace["rows"]
    assert result.currency == "CNY" and len(rows) == len(result.quotes) > 0
    assert len({q.market for q in result.cheapest_by_market}) > 1  # market="any"
    run(sized, namespace)
    assert namespace["sizing"].remedies  # 70B LoRA fits no single GPU: remedies are listed
    assert namespace["result"].quotes[0].market == "spot"
    capsys.readouterr()
    run(errors, namespace)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("no on-demand offer of 3x A100")  # the NoOfferError example
    assert printed[1] == (  # the UsageError example, as its comment says
        "hours must be > 0, got '-1'; accepted: (0, 876,000] hours (100 years)"
    )


@pytest.fixture
def fake_clouds(monkeypatch, tmp_path):
    """Aliyun and Tencent as in-process fakes, given wherever the guide's code loads providers."""
    pm, clouds = fake_world(aliyun="20", tencent="25")
    replicator = FakeReplicator(clouds)
    monkeypatch.setattr(api, "load_plugins", lambda **_: pm)
    monkeypatch.setattr("cloudbroker.storage.syncing.RcloneReplicator", lambda _pm: replicator)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.sh").write_text("#!/bin/bash\nexec python train.py --resume-latest\n")
    return clouds, replicator


def test_the_scheduler_example_places_watches_fails_over_and_stops(fake_clouds):
    clouds, replicator = fake_clouds
    place, up, watch, down = blocks(section("A scheduler that places and watches"))
    namespace = run(place, {})
    placement = namespace["placement"]
    assert (placement.primary.provider, placement.standby.provider) == ("aliyun", "tencent")
    assert placement.cost.complete and placement.cost.total.amount > 0
    assert Path("placements.db").is_file()  # the state file the example named

    run(up, namespace)
    [primary] = clouds["aliyun"].live()
    assert namespace["primary"].instance_id == primary
    assert "exec python train.py" not in clouds["aliyun"].instances[primary]["user_data"]  # b64

    # the drill: a checkpoint in the primary bucket, then the cloud reclaims the instance
    replicator.write(BucketRef(provider="aliyun", bucket="ckpt-bj", path="run1"), "step-1.pt")
    clouds["aliyun"].instances[primary]["reclaim"] = "spot instance is being recycled"
    run(watch, namespace)
    last = namespace["last"]
    assert (last.from_provider, last.to_provider) == ("aliyun", "tencent")
    assert last.reason.startswith("reclaim") and last.rpo_seconds is not None
    assert clouds["aliyun"].live() == [] and len(clouds["tencent"].live()) == 1

    run(down, namespace)
    assert clouds["tencent"].live() == []
    assert namespace["events"]  # on_event saw what the broker did


@pytest.mark.slow
def test_the_sync_example_copies_and_verifies(monkeypatch, clean_env):
    from support.s3 import S3Server, cloud_env, put_files

    servers = {"aliyun": S3Server(), "tencent": S3Server()}
    try:
        servers["aliyun"].client().create_bucket(Bucket="ckpt-bj")
        servers["tencent"].client().create_bucket(Bucket="ckpt-gz")
        put_files(servers["aliyun"], "ckpt-bj", "run1", 3, 1024)
        for name, value in cloud_env(servers).items():
            monkeypatch.setenv(name, value)
        [code] = blocks(section("Sync a checkpoint folder"))
        result = run(code, {})["result"]
        assert (result.files, result.bytes, result.verified) == (3, 3 * 1024, True)
    finally:
        for server in servers.values():
            server.stop()


# -- the reference -------------------------------------------------------------------------


def reference() -> dict[str, str]:
    """Documented name (``quote``, ``Broker.place``) -> the text of its entry."""
    text = TEXT.split("\n## Reference\n", 1)[1].split("\n## ", 1)[0]
    matches = list(HEADING.finditer(text))
    ends = [m.start() for m in matches[1:]] + [len(text)]
    return {m["name"]: text[m.end() : end] for m, end in zip(matches, ends, strict=True)}


def documented_arguments(entry: str) -> list[str]:
    return re.findall(r"^\| `(\w+)` \|", entry, flags=re.M)


def test_the_reference_has_an_entry_for_every_public_name():
    errors = TEXT.split("\n### Errors\n", 1)[1].split("\n## ", 1)[0]
    documented = set(reference()) | set(re.findall(r"^\| `(\w+)` \|", errors, flags=re.M))
    public = set(cloudbroker.__all__) - {"__version__"}
    assert public - documented == set(), f"{GUIDE}: no reference entry"
    methods = {n for n in documented if "." in n}
    assert {m.split(".")[0] for m in methods} == {"Broker"}
    stale = documented - public - methods
    assert not stale, f"{GUIDE} documents names that are not public: {stale}"


CALLABLES = {
    "quote": cloudbroker.quote,
    "size": cloudbroker.size,
    "sync": cloudbroker.sync,
    "load_plugins": cloudbroker.load_plugins,
    **{
        f"Broker.{name}": getattr(cloudbroker.Broker, name)
        for name, _ in inspect.getmembers(cloudbroker.Broker, inspect.isfunction)
        if not name.startswith("_")
    },
}


@pytest.mark.parametrize("name", sorted(CALLABLES))
def test_every_argument_is_in_the_reference_table(name):
    entry = reference()[name]
    parameters = [p for p in inspect.signature(CALLABLES[name]).parameters if p != "self"]
    assert documented_arguments(entry) == parameters, f"{GUIDE}: {name}'s table"


def test_the_api_docstrings_examples_run(clean_env):
    from cloudbroker.api import quoting

    results = [doctest.testmod(m, optionflags=doctest.ELLIPSIS) for m in (api, quoting)]
    assert sum(r.attempted for r in results) >= 3 and sum(r.failed for r in results) == 0
