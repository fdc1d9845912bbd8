"""Issue 36, item 6: an ECS instance in the bucket's region writes its checkpoints through
OSS's internal endpoint (free, no public IP needed); the controller keeps the public one."""

from __future__ import annotations

from cloudbroker.models import BucketRef
from cloudbroker.plugins.launching import user_data

BUCKET = BucketRef(provider="aliyun", bucket="ckpts", path="run-1", region="cn-beijing")


def endpoint_in(script: str) -> str:
    [line] = [ln for ln in script.splitlines() if "RCLONE_CONFIG_CKPT_ENDPOINT=" in ln]
    return line.split("=", 1)[1]


def test_an_instance_in_the_buckets_region_gets_the_internal_endpoint(pm):
    remote = pm.sync_storage("aliyun", BUCKET)
    assert remote.options["endpoint"] == "oss-cn-beijing.aliyuncs.com"  # the controller's
    assert remote.instance_endpoints == {"cn-beijing": "oss-cn-beijing-internal.aliyuncs.com"}
    inside = user_data("pl-1", "a", remote, "echo job", provider="aliyun", region="cn-beijing")
    assert endpoint_in(inside) == "oss-cn-beijing-internal.aliyuncs.com"
    elsewhere = user_data("pl-1", "a", remote, "echo job", provider="aliyun", region="cn-shanghai")
    assert endpoint_in(elsewhere) == "oss-cn-beijing.aliyuncs.com"  # another region: public


def test_an_overridden_store_serves_instances_at_its_own_address(make_pm, ecs_env):
    public = {**ecs_env, "CLOUDBROKER_ALIYUN_STORAGE_ENDPOINT": "http://127.0.0.1:5301"}
    remote = make_pm(public).sync_storage("aliyun", BUCKET)
    assert remote.instance_endpoints == {"cn-beijing": "http://127.0.0.1:5301"}
    mapped = {**public, "CLOUDBROKER_ALIYUN_INTERNAL_STORAGE_ENDPOINT": "http://127.0.0.1:5302"}
    remote = make_pm(mapped).sync_storage("aliyun", BUCKET)
    assert remote.options["endpoint"] == "http://127.0.0.1:5301"
    assert remote.instance_endpoints == {"cn-beijing": "http://127.0.0.1:5302"}


def test_the_sandbox_maps_the_internal_endpoint_to_its_local_store():
    from cloudbroker.sandbox.clouds import CLOUDS

    aliyun = next(c for c in CLOUDS if c.name == "aliyun")
    env = aliyun.env("http://127.0.0.1:1", "http://127.0.0.1:2", "k", "s")
    assert env["CLOUDBROKER_ALIYUN_INTERNAL_STORAGE_ENDPOINT"] == "http://127.0.0.1:2"
