"""The four built-in plugins state only what differs (issue 30, item 6): the delegation of
every live hook to the package's modules is written once, in core."""

from __future__ import annotations

import importlib

import pytest

from cloudbroker.plugins import hookspecs
from cloudbroker.plugins.provider import ModularProvider

PACKAGES = ("cloudbroker_aws", "cloudbroker_aliyun", "cloudbroker_tencent", "cloudbroker_huawei")


@pytest.mark.parametrize("package", PACKAGES)
def test_each_plugin_names_its_modules_and_writes_only_its_own_hooks(package):
    module = importlib.import_module(f"{package}.plugin")
    plugin = module.plugin
    assert isinstance(plugin, ModularProvider)
    own = {name for name in vars(type(plugin)) if name in hookspecs.HOOKS}
    assert own <= {"spot_notice", "provider_info"}, own  # what differs between clouds
    for part in ("offers", "instances", "quotas", "billing", "storage"):
        assert getattr(plugin.modules, part) is importlib.import_module(f"{package}.{part}")
    # the hooks the core writes once are still the plugin's
    for hook in ("launch", "terminate", "instance_status", "sync_storage", "billed", "quotas"):
        assert getattr(getattr(plugin, hook), "cloudbroker_impl", None) is not None, hook
