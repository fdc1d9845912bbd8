"""Issue 45: an ECS gets no public IP; OBS's regional endpoint is the same inside and outside
the VPC and resolves privately there, so an instance in the bucket's region is declared to
reach it without one (``instance_endpoints``); another region is not (no private path)."""

from __future__ import annotations

from cloudbroker.models import BucketRef
from cloudbroker.plugins.launching import user_data
from cloudbroker_huawei.plugin import DESCRIPTION, HuaweiProvider

BUCKET = BucketRef(provider="huawei", bucket="ckpt", path="run-1", region="cn-north-4")


def remote_for(cloudbroker_plugins, env, settings):
    manager = cloudbroker_plugins(
        HuaweiProvider(DESCRIPTION), "huawei", env=env, settings={"huawei": settings}
    )
    return manager.sync_storage("huawei", BUCKET)


def test_an_instance_in_the_buckets_region_reaches_it_privately(
    cloudbroker_plugins, huawei_env, huawei_settings
):
    env = {key: value for key, value in huawei_env.items() if "ENDPOINT" not in key}
    remote = remote_for(cloudbroker_plugins, env, huawei_settings)
    regional = "https://obs.cn-north-4.myhuaweicloud.com"
    assert remote.options["endpoint"] == regional
    assert remote.instance_endpoints == {"cn-north-4": regional}
    script = user_data("pl-1", "a", remote, "echo job", provider="huawei", region="cn-north-4")
    assert f"export RCLONE_CONFIG_CKPT_ENDPOINT={regional}" in script.splitlines()


def test_an_internal_override_serves_instances_only(
    cloudbroker_plugins, huawei_env, huawei_settings
):
    env = {
        **huawei_env,
        "CLOUDBROKER_HUAWEI_STORAGE_ENDPOINT": "http://127.0.0.1:5301",
        "CLOUDBROKER_HUAWEI_INTERNAL_STORAGE_ENDPOINT": "http://127.0.0.1:5302",
    }
    remote = remote_for(cloudbroker_plugins, env, huawei_settings)
    assert remote.options["endpoint"] == "http://127.0.0.1:5301"
    assert remote.instance_endpoints == {"cn-north-4": "http://127.0.0.1:5302"}
