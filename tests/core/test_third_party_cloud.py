"""Issue 32: a third party's cloud in the sandbox, its storage access, its keys and its API.

No process is started here: the sandbox's discovery and environment, the metadata service a
plugin's recipe describes, scoped keys in user data, the plan that refuses an unreachable
bucket, storage credentials apart, and JsonApi's per-call headers and repeated query keys.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from decimal import Decimal
from typing import ClassVar

import pytest
from pydantic import SecretStr, ValidationError
from support.broker_fakes import FakeCloud, FakeReplicator
from support.cli import run_cli

from cloudbroker.broker import Broker, PlaceRequest
from cloudbroker.cli.providers_table import _credentials
from cloudbroker.errors import ThrottledError, UsageError
from cloudbroker.models import (
    BucketRef,
    InstanceCredentials,
    MetadataToken,
    StorageRemote,
    parse_bucket,
)
from cloudbroker.plugins import PluginManager
from cloudbroker.plugins.context import HookContext
from cloudbroker.plugins.hookspecs import hookimpl
from cloudbroker.plugins.launching import KEYS_FILE, launch_request, redact, user_data
from cloudbroker.plugins.provider import Description
from cloudbroker.plugins.rest import JsonApi, bearer
from cloudbroker.sandbox import clouds
from cloudbroker.sandbox.env import environment
from cloudbroker.sandbox.instances import localise
from cloudbroker.sandbox.metadata import Credentials, MetadataServer, Service
from cloudbroker.state import open_store
from cloudbroker.storage.s3_remote import s3_remote
from cloudbroker.testing.emulator import JsonEmulator, Request, Response

# -- 1. the sandbox runs a plugin's cloud ---------------------------------------------------


class AcmeEmulator(JsonEmulator):
    name = "acme"
    sandbox_env: ClassVar[dict[str, str]] = {
        "CLOUDBROKER_ACME_ENDPOINT": "{api}",
        "CLOUDBROKER_ACME_STORAGE_ENDPOINT": "{storage}",
        "ACME_API_KEY": "{key}",
        "ACME_STORAGE_SECRET": "{secret}",
    }
    sandbox_settings: ClassVar[dict[str, str]] = {"image": "acme-image"}


class EntryPoint:
    def __init__(self, name: str, value: str) -> None:
        self.name, self.value = name, value


def test_a_plugin_shipping_an_emulator_is_a_sandbox_cloud(monkeypatch):
    groups = {
        clouds.PROVIDER_GROUP: [
            EntryPoint("acme", "cloudbroker_acme.plugin:plugin"),
            EntryPoint("lonely", "cloudbroker_lonely.plugin:plugin"),  # no emulator: not run
            EntryPoint("aliyun", "cloudbroker_aliyun.plugin:plugin"),
        ],
        clouds.EMULATOR_GROUP: [
            EntryPoint("acme", f"{__name__}:AcmeEmulator"),
            EntryPoint("ghost", "cloudbroker_ghost.emulator:Ghost"),  # no such provider
            EntryPoint("aliyun", "somewhere:Else"),  # a built-in's name: CLOUDS runs it
        ],
    }
    monkeypatch.setattr(clouds, "entry_points", lambda group: groups[group])
    [acme] = clouds.plugin_clouds()
    assert (acme.name, acme.package) == ("acme", "cloudbroker_acme")
    assert acme.emulator_class() is AcmeEmulator
    assert acme.env("http://api", "http://s3", "K", "S") == {
        "CLOUDBROKER_ACME_ENDPOINT": "http://api",
        "CLOUDBROKER_ACME_STORAGE_ENDPOINT": "http://s3",
        "ACME_API_KEY": "K",
        "ACME_STORAGE_SECRET": "S",
    }
    assert clouds.launch_settings(acme, AcmeEmulator) == {"image": "acme-image"}
    assert [c.name for c in clouds.installed()][-1] == "acme"  # beside the built-ins


def test_sandbox_env_enables_every_cloud_it_runs_with_what_up_recorded(tmp_path):
    plugin_env = {"CLOUDBROKER_ACME_ENDPOINT": "http://127.0.0.1:9", "ACME_API_KEY": "k3"}
    info = {
        "pid": 1,
        "started": None,
        "time_factor": 0.01,
        "clouds": {
            "aliyun": {"api": "http://127.0.0.1:1", "storage": "http://127.0.0.1:2", "key": "k",
                       "secret": "s", "notice_seconds": 3.0},
            "acme": {"api": "http://127.0.0.1:9", "storage": "http://127.0.0.1:8", "key": "k3",
                     "secret": "s3", "notice_seconds": 1.2, "env": plugin_env},
        },
    }  # fmt: skip
    env = environment(tmp_path, info)
    assert env["CLOUDBROKER_PLUGINS"] == "aliyun,acme"
    assert env["ACME_API_KEY"] == "k3" and env["CLOUDBROKER_ACME_ENDPOINT"].endswith(":9")
    assert env["ALIBABA_CLOUD_ACCESS_KEY_ID"] == "k"  # a built-in without a recorded env


RECIPE = InstanceCredentials(
    service="Acme instance role",
    endpoint="http://169.254.169.254",
    path="/v1/identity/storage/{role}",
    roles_path="/v1/identity/storage/",
    token=MetadataToken(path="/v1/token", ttl_header="X-Acme-Ttl", header="X-Acme-Token"),
    fields={"access_key_id": "KeyId", "secret_access_key": "Secret", "session_token": "Token"},
    source="unsourced: a fictional cloud of this test",
)


def test_a_plugins_metadata_service_answers_as_its_recipe_says():
    from datetime import UTC, datetime

    minted = Credentials("ASIA1", "secret-1", "token-1", datetime(2026, 12, 1, tzinfo=UTC))
    server = MetadataServer("acme", lambda: minted, service=Service.from_recipe(RECIPE)).start()
    try:
        put = urllib.request.Request(
            f"{server.url}/v1/token", method="PUT", headers={"X-Acme-Ttl": "300"}
        )
        token = urllib.request.urlopen(put, timeout=5).read().decode()
        headers = {"X-Acme-Token": token}

        def get(path: str) -> str:
            request = urllib.request.Request(server.url + path, headers=headers)
            return urllib.request.urlopen(request, timeout=5).read().decode()

        role = get("/v1/identity/storage/")
        answer = json.loads(get(f"/v1/identity/storage/{role}"))
    finally:
        server.stop()
    assert (answer["KeyId"], answer["Secret"], answer["Token"]) == ("ASIA1", "secret-1", "token-1")


# -- 2. storage access from instances --------------------------------------------------------

BUCKET = BucketRef(provider="acme", bucket="ckpt", path="train")


def keyed_remote() -> StorageRemote:
    return s3_remote(
        BUCKET, "Other", access_key_id="broker-key", secret_access_key="broker-secret",
        instance_keys=("scoped-key", "scoped-secret/+="), endpoint="http://s3.acme.example",
    )  # fmt: skip


def test_scoped_keys_reach_the_instance_in_a_root_only_file_and_are_redacted(tmp_path):
    script = user_data("pl-1", "a", keyed_remote(), "echo job")
    assert "scoped-secret/+=" in script and "broker-secret" not in script
    assert f"(umask 077 && cat > {KEYS_FILE})" in script
    assert "RCLONE_CONFIG_CKPT_ENV_AUTH" not in script
    shown = redact(script)
    assert "scoped" not in shown and f"[storage keys redacted: written to {KEYS_FILE}]" in shown
    # run as the sandbox runs an instance: the job sees the keys, the file is the owner's only
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    job = "#!/bin/sh\necho id=$RCLONE_CONFIG_CKPT_ACCESS_KEY_ID"
    job += " secret=$RCLONE_CONFIG_CKPT_SECRET_ACCESS_KEY\n"
    runnable = localise(user_data("pl-1", "a", keyed_remote(), job), root)
    env = {**os.environ, "CLOUDBROKER_REPORT_SECONDS": "0"}  # the agent's last report: one try
    done = subprocess.run(
        ["bash", "-c", runnable], capture_output=True, text=True, timeout=30, env=env
    )
    assert done.stdout.strip() == "id=scoped-key secret=scoped-secret/+=", done.stderr
    assert oct((root / KEYS_FILE.lstrip("/")).stat().st_mode & 0o777) == "0o600"


def test_a_launch_request_never_shows_its_user_data():
    request = launch_request(
        "acme", {"image": "img"}, region="r1", instance_type="t", key="cb-1",
        user_data=user_data("pl-1", "a", keyed_remote(), None),
    )  # fmt: skip
    assert "scoped-secret" not in repr(request) and "scoped-secret" not in str(request)


def test_a_remote_gives_instances_one_way_to_reach_it():
    with pytest.raises(ValidationError, match="give one of instance_credentials, instance_keys"):
        StorageRemote(
            options={}, bucket="b", instance_credentials=RECIPE,
            instance_keys={"access_key_id": SecretStr("a"), "secret_access_key": SecretStr("b")},
        )  # fmt: skip
    with pytest.raises(ValidationError, match="instance_keys needs access_key_id"):
        StorageRemote(options={}, bucket="b", instance_keys={"access_key_id": SecretStr("a")})
    assert keyed_remote().instance_access == "keys"
    assert StorageRemote(options={}, bucket="b").instance_access is None


class Unreachable(FakeCloud):
    """A cloud whose sync_storage names no way for its instances to reach the bucket."""

    @hookimpl
    def sync_storage(self, ctx, bucket):
        return StorageRemote(options={"provider": "Other"}, bucket=bucket.bucket, path=bucket.path)


def _place(tmp_path, standby: FakeCloud):
    pm = PluginManager(env={}, settings={n: {"image": f"img-{n}"} for n in ("ali", "ten")})
    fakes = {"ali": FakeCloud("ali", "20"), "ten": standby}
    for name, fake in fakes.items():
        pm.register(fake, name)
    broker = Broker(
        pm, open_store(tmp_path / f"{type(standby).__name__}.db"), FakeReplicator(fakes)
    )
    return broker.place(
        PlaceRequest(
            gpu="A100", count=8, hours=Decimal(10), primary="ali", standby="ten",
            bucket=parse_bucket("ali:ckpt-a/run1", "--bucket"),
            standby_bucket=parse_bucket("ten:ckpt-b/run1", "--standby-bucket"),
        )
    )  # fmt: skip


def test_place_refuses_a_standby_that_could_not_reach_its_bucket(tmp_path):
    with pytest.raises(UsageError) as refused:
        _place(tmp_path, Unreachable("ten", "25"))
    message = str(refused.value)
    assert "the standby ten could not reach its bucket ten:ckpt-b/run1" in message
    assert "instance_credentials, instance_keys or instance_env_auth" in message
    placed, _ = _place(tmp_path, FakeCloud("ten", "25"))  # the same plan, reachable: placed
    assert placed.startswith("pl-")


# -- 6. JsonApi: per-call headers and repeated query keys ------------------------------------


class Echo(JsonEmulator):
    name = "echo"
    routes: ClassVar[dict[tuple[str, str], str]] = {
        ("POST", "/v1/orders"): "Order",
        ("GET", "/v1/stock"): "Stock",
    }
    fault_errors: ClassVar[dict[str, tuple[int, str, str]]] = {
        "throttle": (429, "SlowDown", "too many requests"),
        "server-error": (503, "Unavailable", "later"),
        "capacity": (409, "NoStock", "sold out"),
    }

    def handle(self, action: str, request: Request) -> Response:
        if action == "Order":
            return Response(200, {"key": request.header("idempotency-key")})
        return Response(200, {"types": request.query_all("type"), "last": request.query["type"]})


API = JsonApi(
    cloud="Echo", endpoint_env="CLOUDBROKER_ECHO_ENDPOINT", default_endpoint="http://x",
    auth=bearer("ECHO_KEY"), errors={429: ThrottledError}, base=0.01,
)  # fmt: skip


def test_json_api_sends_per_call_headers_on_every_attempt_and_repeated_query_keys(
    cloudbroker_emulator,
):
    echo = cloudbroker_emulator(Echo, access_key="k")
    ctx = HookContext(
        provider="echo", env={"CLOUDBROKER_ECHO_ENDPOINT": echo.url, "ECHO_KEY": "k"}, timeout=5
    )
    echo.inject("throttle", count=1)
    answer = API.call(ctx, "POST", "/v1/orders", {"n": 1}, headers={"Idempotency-Key": "cb-7"})
    assert answer == {"key": "cb-7"}  # the retry after the 429 carried it too
    spoof = API.call(ctx, "POST", "/v1/orders", {}, headers={"Authorization": "Bearer other"})
    assert spoof == {"key": ""}  # the auth headers win: the call was authorised with the key
    stock = API.call(ctx, "GET", "/v1/stock", query=[("type", "a"), ("type", "b")])
    assert stock == {"types": ["a", "b"], "last": "b"}


# -- 7. storage credentials apart ------------------------------------------------------------


def test_storage_credentials_are_reported_apart_from_the_compute_ones():
    description = Description(
        name="acme", title="Acme", currency="USD", credential_env=("ACME_API_KEY",),
        credential_files=(), credential_hint="set ACME_API_KEY", package="cloudbroker_acme",
        storage_credential_env=("ACME_S3_KEY", "ACME_S3_SECRET"),
    )  # fmt: skip
    ctx = HookContext(provider="acme", env={"ACME_API_KEY": "k"})
    info = description.info(ctx)
    assert info.credentials.configured
    assert info.storage_credentials is not None and not info.storage_credentials.configured
    assert info.storage_credentials.hint == "set ACME_S3_KEY and ACME_S3_SECRET"
    shown = _credentials(
        info.credentials.model_dump(mode="json"), info.storage_credentials.model_dump(mode="json")
    )
    assert shown == "yes (env ACME_API_KEY); storage: no"
    assert _credentials({"configured": True, "source": "env K"}, None) == "yes (env K)"


def test_the_providers_command_shows_no_storage_column_for_one_set_of_keys(clean_env):
    result = run_cli("providers", "--json", env={**clean_env, "CLOUDBROKER_PLUGINS": "aliyun"})
    [row] = [r for r in json.loads(result.stdout) if r["name"] == "aliyun"]
    assert row["status"] == "ok" and row["storage_credentials"] is None


# -- 7. cross-region bytes billed as internet egress -----------------------------------------

TERMS = {
    "region": "*", "internet_source": "s", "internet_free_gb": "100",
    "internet_tiers": [["10240", "0.05 EUR"], ["", "0.04 EUR"]],
    "cross_region_source": "s", "cross_zone": "0 EUR", "cross_zone_source": "s",
    "object_storage_gb_month_source": "s", "snapshot_gb_month_source": "s",
}  # fmt: skip


def test_cross_region_as_internet_shares_the_free_allowance_and_the_tiers():
    from cloudbroker.catalogs import catalog
    from cloudbroker.models import PriceSheet, Source
    from cloudbroker.quote.costs import egress_cost
    from cloudbroker.storage.rclone_session import Side
    from cloudbroker.storage.syncing import BYTES_PER_GB, price_egress

    sources = {"s": Source(name="a source", as_of="2026-11-01")}
    terms = catalog._region_terms({**TERMS, "cross_region_as_internet": True}, sources, "t")
    assert terms.egress.cross_region_internet
    # 150 GB: the first 100 free, as for internet egress, then 50 at the first tier
    assert egress_cost(terms.egress, Decimal(150), "cross-region").amount == Decimal("2.50")
    plain = catalog._region_terms({**TERMS, "cross_region": "0.01 EUR"}, sources, "t")
    assert egress_cost(plain.egress, Decimal(150), "cross-region").amount == Decimal("1.50")
    sheet = PriceSheet(provider="acme", currency="EUR", as_of="2026-11-01", compute=(),
                       terms=(terms,))  # fmt: skip
    remote = StorageRemote(options={}, bucket="b")

    def side(region: str) -> Side:
        ref = BucketRef(provider="acme", bucket="ckpt", region=region)
        return Side("source", ref, remote, "src", region)

    cost, _, how = price_egress(sheet, side("r1"), side("r2"), int(150 * BYTES_PER_GB))
    assert cost is not None and cost.amount == Decimal("2.50")
    assert "bills cross-region r1 -> r2 as internet egress" in how and "100 GB free" in how
    with pytest.raises(Exception, match="give it or cross_region / cross_region_to, not both"):
        catalog._region_terms(
            {**TERMS, "cross_region_as_internet": True, "cross_region": "0.01 EUR"}, sources, "t"
        )
