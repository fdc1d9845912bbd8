"""Issue 45: a CVM gets no public IP, so one in the bucket's region writes its checkpoints
through COS's internal domain (cos-internal.<region>.tencentcos.cn); the controller keeps the
public endpoint, and an instance in another region the public one (no private path there)."""

from __future__ import annotations

from cloudbroker.models import BucketRef
from cloudbroker.plugins.launching import user_data

BUCKET = BucketRef(provider="tencent", bucket="ckpt-1250000000", path="run-1", region="ap-shanghai")
CREDS = {"TENCENTCLOUD_SECRET_ID": "AKIDstorage", "TENCENTCLOUD_SECRET_KEY": "storage-secret"}


def endpoint_in(script: str) -> str:
    [line] = [ln for ln in script.splitlines() if "RCLONE_CONFIG_CKPT_ENDPOINT=" in ln]
    return line.split("=", 1)[1]


def test_an_instance_in_the_buckets_region_gets_the_internal_domain(cloudbroker_env, make_pm):
    remote = make_pm({**cloudbroker_env, **CREDS}).sync_storage("tencent", BUCKET)
    assert remote.options["endpoint"] == "cos.ap-shanghai.myqcloud.com"  # the controller's
    assert remote.instance_endpoints == {"ap-shanghai": "cos-internal.ap-shanghai.tencentcos.cn"}
    inside = user_data("pl-1", "a", remote, "echo job", provider="tencent", region="ap-shanghai")
    assert endpoint_in(inside) == "cos-internal.ap-shanghai.tencentcos.cn"
    elsewhere = user_data("pl-1", "a", remote, "echo job", provider="tencent", region="ap-beijing")
    assert endpoint_in(elsewhere) == "cos.ap-shanghai.myqcloud.com"


def test_an_overridden_store_serves_instances_at_its_own_address(cloudbroker_env, make_pm):
    public = {
        **cloudbroker_env,
        **CREDS,
        "CLOUDBROKER_TENCENT_STORAGE_ENDPOINT": "http://127.0.0.1:5301",
    }
    remote = make_pm(public).sync_storage("tencent", BUCKET)
    assert remote.instance_endpoints == {"ap-shanghai": "http://127.0.0.1:5301"}
    mapped = {**public, "CLOUDBROKER_TENCENT_INTERNAL_STORAGE_ENDPOINT": "http://127.0.0.1:5302"}
    remote = make_pm(mapped).sync_storage("tencent", BUCKET)
    assert remote.options["endpoint"] == "http://127.0.0.1:5301"
    assert remote.instance_endpoints == {"ap-shanghai": "http://127.0.0.1:5302"}
