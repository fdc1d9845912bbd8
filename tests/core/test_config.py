"""The config file: location override, redaction, and missing settings named clearly."""

from __future__ import annotations

import subprocess
import sys

import pytest

from cloudbroker.config import load_config, redacted, require
from cloudbroker.errors import ConfigError

CONFIG = """
[providers.aliyun]
region = "cn-beijing"
image = "ubuntu"
key_name = "my-key"
access_key_secret = "very-secret-value"
"""


def test_config_show_redacts_secrets(clean_env, tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(CONFIG)
    env = {**clean_env, "CLOUDBROKER_CONFIG": str(path)}
    done = subprocess.run(
        [sys.executable, "-m", "cloudbroker", "config", "show"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert str(path) in done.stdout
    assert "very-secret-value" not in done.stdout
    assert '"key_name": "my-key"' in done.stdout
    assert '"access_key_secret": "***"' in done.stdout


def test_missing_setting_is_named(tmp_path):
    config = load_config({"CLOUDBROKER_CONFIG": str(tmp_path / "none.toml")})
    assert config == {}
    with pytest.raises(ConfigError, match=r"missing setting\(s\) image in \[providers.aliyun\]"):
        require({"region": "x"}, "aliyun", "region", "image")


def test_redacted_keeps_structure():
    assert redacted({"a": {"secret_key": "s", "n": [1]}}) == {"a": {"secret_key": "***", "n": [1]}}
