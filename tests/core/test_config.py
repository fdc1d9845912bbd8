"""The config file: location override, redaction, checked types, and safe reading."""

from __future__ import annotations

import json

import pytest
from support.cli import run_cli

from cloudbroker.config import load_config, redacted, require
from cloudbroker.errors import ConfigError

CONFIG = """
[providers.aliyun]
region = "cn-beijing"
image = "ubuntu"
key_name = "my-key"
access_key_secret = "very-secret-value"
"""


def show(clean_env: dict[str, str], path) -> tuple[int, str, str]:
    done = run_cli("config", "show", env={**clean_env, "CLOUDBROKER_CONFIG": str(path)})
    return done.returncode, done.stdout, done.stderr


def test_config_show_redacts_secrets(clean_env, tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(CONFIG)
    code, out, err = show(clean_env, path)
    assert code == 0, err
    assert str(path) in out
    assert "very-secret-value" not in out
    assert '"key_name": "my-key"' in out
    assert '"access_key_secret": "***"' in out


SECRETS = """
[providers.example]
private_key = "S1"
api_key = "S2"
passwd = "S3"
pwd = "S4"
credential = "S5"
auth = "S6"
key = "S7"
ssh_private_key_pem = "S8"
access_key_id = "S9"
sk = "S10"
Token = "S11"
note = "-----BEGIN OPENSSH PRIVATE KEY-----S12"
[providers.example.credentials]
id = "S13"
list = ["S14"]
[providers.example.shown]
region = "cn-beijing"
key_name = "my-key"
disk_gb = 200
"""


def test_config_show_redacts_by_a_broad_rule_and_whole_tables(clean_env, tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(SECRETS)
    code, out, err = show(clean_env, path)
    assert code == 0, err
    shown = json.loads(out.split("\n", 1)[1])["providers"]["example"]
    assert not any(f'"S{i}"' in out for i in range(1, 15)), out
    assert shown["credentials"] == "***" and shown["note"] == "***"
    assert shown["shown"] == {"region": "cn-beijing", "key_name": "my-key", "disk_gb": 200}


def test_missing_setting_is_named(tmp_path):
    config = load_config({"CLOUDBROKER_CONFIG": str(tmp_path / "none.toml")})
    assert config == {}
    with pytest.raises(ConfigError, match=r"missing setting\(s\) image in \[providers.aliyun\]"):
        require({"region": "x"}, "aliyun", "region", "image")


def test_redacted_keeps_structure():
    assert redacted({"a": {"secret_key": "s", "n": [1]}}) == {"a": {"secret_key": "***", "n": [1]}}


@pytest.mark.parametrize(
    "text, message",
    [
        ('[providers.aliyun]\ndisk_gb = "lots"\n', "providers.aliyun.disk_gb must be a whole"),
        ("[providers.aliyun]\ndisk_gb = 1e308\n", "disk_gb must be a whole number of GB"),
        ("[providers.aliyun]\ndisk_gb = true\n", "disk_gb must be a whole number of GB"),
        ('[providers.aliyun]\nimages = "x"\n', "providers.aliyun.images must be a table"),
        ("[providers.aliyun.images]\ncn-beijing = 5\n", "images.cn-beijing must be a string"),
        ('[providers.aws]\nregions = "us-east-1"\n', "providers.aws.regions must be an array"),
        ("[providers.aws]\nregion = 1\n", "providers.aws.region must be a string, got an integer"),
        ('[providers]\naliyun = "x"\n', "providers.aliyun must be a table ([providers.aliyun])"),
        ('providers = "x"\n', "providers must be a table of [providers.NAME] tables"),
        ('[providers."a\\nb"]\nregion = 1\n', "'providers.a\\nb.region' must be a string"),
    ],
)
def test_a_setting_of_the_wrong_type_is_one_line_naming_file_key_and_type(
    clean_env, tmp_path, text, message
):
    path = tmp_path / "c.toml"
    path.write_text(text)
    for argv in (("config", "show"), ("quote", "--gpu", "A100")):
        done = run_cli(*argv, env={**clean_env, "CLOUDBROKER_CONFIG": str(path)})
        assert done.returncode == 2, done.stdout
        assert done.stderr.startswith(f"error: config file '{path}': ")
        assert message in done.stderr and done.stderr.count("\n") == 1, done.stderr


def test_a_config_that_is_not_utf8_text_or_not_a_small_file_is_one_line(clean_env, tmp_path):
    """(A FIFO and /dev/zero, which would hang, are in test_hostile_input.py, under a timeout.)"""
    (tmp_path / "latin1.toml").write_bytes(b'[providers.aliyun]\nregion = "caf\xe9"\n')
    (tmp_path / "huge.toml").write_bytes(b"#" * (1 << 21))
    (tmp_path / "deep.toml").write_text("x = " + "[" * 100_000)
    expected = {
        "latin1.toml": "is not UTF-8 text (byte 0xe9 at offset 32)",
        "huge.toml": "is larger than 1,048,576 bytes",
        str(tmp_path): "is not a regular file",
        "deep.toml": "nested too deeply",
    }
    for name, message in expected.items():
        path = tmp_path / name
        code, out, err = show(clean_env, path)
        assert code == 2 and err.startswith("error: ") and message in err, err
        assert f"config file '{path}'" in err
        assert err.count("\n") == 1 and out == ""
