"""Shared test setup: no test may reach a real cloud or read the developer's credentials."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
os.environ.setdefault("ALIBABA_CLOUD_ECS_METADATA_DISABLED", "true")
# pytest exports COLUMNS=80 to its workers; a test that cares about width sets it itself.
os.environ.pop("COLUMNS", None)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> dict[str, str]:
    """An environment with no cloud credentials and a throw-away HOME and config."""
    for name in list(os.environ):
        if name.startswith(
            ("AWS_", "ALIBABA_CLOUD_", "TENCENTCLOUD_", "HUAWEICLOUD_", "CLOUDBROKER_")
        ):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("ALIBABA_CLOUD_ECS_METADATA_DISABLED", "true")
    return dict(os.environ)
