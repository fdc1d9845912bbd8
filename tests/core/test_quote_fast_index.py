"""The compiled catalog index (cloudbroker.catalogs.catalog_index), and the fast ``providers`` and
``--help``: stale when anything they depend on changes, ignored when broken, never an error.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import environment, run_cli
from support.fast_cli import fast_cli, indexed, same_as_full

from cloudbroker import plugins
from cloudbroker.catalogs import catalog_index


@pytest.fixture
def cache_env(clean_env, tmp_path):
    """The clean environment with its own index folder, the index written by a full quote."""
    return indexed(clean_env, str(tmp_path / "cache"))


# -- the index ------------------------------------------------------------------------------


def installed() -> dict:
    return catalog_index.installed(os.environ)


def current(provider: str, plugin: tuple) -> bool | None:
    """True when ``provider``'s index is current (None when not), the file closed again."""
    index = catalog_index.open_index(provider, plugin)
    if index is None:
        return None
    index.close()
    return True


def test_the_index_is_stale_when_a_refreshed_catalog_appears(cache_env, tmp_path):
    from cloudbroker.plugins.paths import user_catalog_dir

    env = dict(cache_env, CLOUDBROKER_DATA_DIR=str(tmp_path / "data"))
    with environment(env):  # another data folder: another refreshed catalog may be there
        assert current("aws", installed()["aws"]) is None
    assert run_cli("quote", "--gpu", "T4", env=env).returncode == 0
    with environment(env):
        assert current("aws", installed()["aws"]) is not None
        source = _data_dir("cloudbroker_aws")
        refreshed = user_catalog_dir("aws")
        refreshed.mkdir(parents=True)
        for name in ("catalog.csv", "terms.toml"):
            shutil.copy(source / name, refreshed / name)
        assert current("aws", installed()["aws"]) is None
        assert current("tencent", installed()["tencent"]) is not None


def _data_dir(package: str) -> Path:
    from importlib.resources import files

    return Path(str(files(package) / "data"))


def test_a_provider_failing_after_it_was_indexed_is_reported_by_the_full_path(cache_env, tmp_path):
    from cloudbroker.plugins.paths import user_catalog_dir

    env = dict(cache_env, CLOUDBROKER_DATA_DIR=str(tmp_path / "data"))
    argv = ["quote", "--gpu", "A100", "--count", "8"]
    assert run_cli(*argv, env=env).returncode == 0  # indexed with this data folder
    with environment(env):
        broken = user_catalog_dir("aws")
    broken.mkdir(parents=True)
    (broken / "catalog.csv").write_text("instance_type\n", encoding="utf-8")
    (broken / "terms.toml").write_text("not = [toml", encoding="utf-8")
    served, out = fast_cli(argv, env)
    assert not served and out == ""
    full = run_cli(*argv, env=env, width=200)
    assert full.returncode == 0 and "failed: aws" in full.stdout  # isolated, as ever


def test_the_index_is_stale_when_a_catalog_file_changes(cache_env, tmp_path):
    with environment(cache_env):
        header = _header("huawei")
        path, mtime, _ = next(s for s in header["stamps"] if s[0].endswith("catalog.csv"))
        assert mtime is not None
        # the stamp no longer matching the file: another mtime (no packaged file is touched)
        stamps = tuple(
            (p, m + 1 if p == path else m, s) if m is not None else (p, m, s)
            for p, m, s in header["stamps"]
        )
        _rewrite("huawei", {**header, "stamps": stamps})
        assert current("huawei", installed()["huawei"]) is None


def test_the_index_is_stale_when_the_plugin_version_changes(cache_env):
    with environment(cache_env):
        dist, version = installed()["aws"]
        assert current("aws", (dist, version)) is not None
        assert current("aws", (dist, version + ".post1")) is None


def test_a_corrupt_index_is_ignored_and_rewritten(cache_env):
    path = Path(cache_env["CLOUDBROKER_CACHE"]) / "index" / "aws.idx"
    path.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00not marshal at all")
    argv = ["quote", "--gpu", "A100", "--count", "8"]
    served, out = fast_cli(argv, cache_env)
    assert not served and out == ""
    assert run_cli(*argv, env=cache_env).returncode == 0  # the full path answers...
    assert same_as_full(argv, cache_env)  # ...and rewrote the index


def test_an_unwritable_cache_only_means_the_full_path(clean_env, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    env = dict(clean_env, CLOUDBROKER_CACHE=str(blocker))
    done = run_cli("quote", "--gpu", "A100", "--count", "8", env=env)
    assert done.returncode == 0 and "p4d.24xlarge" in done.stdout and done.stderr == ""
    assert not fast_cli(["quote", "--gpu", "A100", "--count", "8"], env)[0]


def test_a_plugin_overriding_the_catalog_hooks_is_not_indexed():
    from cloudbroker.plugins.hookspecs import hookimpl
    from cloudbroker.plugins.provider import CatalogProvider

    pm = plugins.load(env={"CLOUDBROKER_PLUGINS": "aws"})
    aws = pm.plugin("aws")
    assert catalog_index._sources(aws) is not None

    class Computed(type(aws)):  # type: ignore[misc]
        @hookimpl
        def price(self, ctx, regions):
            return super().price(ctx, regions)

    assert isinstance(Computed(aws.description), CatalogProvider)
    assert catalog_index._sources(Computed(aws.description)) is None
    assert catalog_index._sources(object()) is None


def _install(folder: Path, name: str, version: str = "1.0") -> Path:
    """A distribution with a provider entry point, as an installer leaves it in ``folder``."""
    info = folder / f"cloudbroker_{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: cloudbroker-{name}\nVersion: {version}\n"
    )
    (info / "entry_points.txt").write_text(f"[cloudbroker.providers]\n{name} = os:sep\n")
    return info


def test_the_kept_entry_points_follow_installs_and_removals(monkeypatch, tmp_path):
    monkeypatch.setenv("CLOUDBROKER_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("CLOUDBROKER_PLUGINS", raising=False)
    monkeypatch.delenv("CLOUDBROKER_DISABLE_PLUGINS", raising=False)
    monkeypatch.setattr(catalog_index, "_DISCOVERED", {})  # nothing known in this process
    monkeypatch.setattr(catalog_index, "_settled", lambda key: True)  # as if the folders were old
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    before = installed()
    assert "extra" not in before and {"aws", "tencent"} <= before.keys()
    kept = tmp_path / "cache" / "index" / "plugins"
    assert kept.is_file()
    assert installed() == before  # the same answer, from what was kept
    info = _install(site, "extra")
    assert installed()["extra"] == ("cloudbroker-extra", "1.0")  # installed: seen at once
    shutil.rmtree(info)
    _install(site, "extra", "2.0")
    assert installed()["extra"] == ("cloudbroker-extra", "2.0")  # upgraded
    shutil.rmtree(site / "cloudbroker_extra-2.0.dist-info")
    assert installed() == before  # removed
    monkeypatch.setattr(catalog_index, "_DISCOVERED", {})
    assert installed() == before  # the kept file again, across processes


def test_entry_points_are_not_kept_while_a_folder_may_still_change(monkeypatch, tmp_path):
    monkeypatch.setenv("CLOUDBROKER_CACHE", str(tmp_path / "cache"))
    monkeypatch.syspath_prepend(str(tmp_path))  # changed just now
    assert "aws" in installed()
    assert not (tmp_path / "cache" / "index" / "plugins").exists()
    key = catalog_index._path_key()
    assert key is not None and not catalog_index._settled(key)
    old = (key[0], tuple((path, 0 if mtime else None, size) for path, mtime, size in key[1]))
    assert catalog_index._settled(old)


def test_a_finder_reporting_distributions_turns_the_kept_entry_points_off(monkeypatch):
    class Finder:
        @staticmethod
        def find_distributions(context=None):
            return iter(())

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder])
    assert catalog_index._path_key() is None


def _header(provider: str) -> dict:
    import marshal

    data = (catalog_index.cache_dir() / f"{provider}.idx").read_bytes()
    size = int.from_bytes(data[:8], "little")
    return marshal.loads(data[8 : 8 + size])


def _rewrite(provider: str, header: dict) -> None:
    import marshal

    path = catalog_index.cache_dir() / f"{provider}.idx"
    data = path.read_bytes()
    size = int.from_bytes(data[:8], "little")
    head = marshal.dumps(header)
    path.write_bytes(len(head).to_bytes(8, "little") + head + data[8 + size :])


# -- providers and --help --------------------------------------------------------------------


@pytest.mark.parametrize("width", [80, 120])
def test_fast_providers_is_the_full_paths(cache_env, width):
    assert same_as_full(["providers"], cache_env, width)


def test_fast_providers_sees_credentials_as_the_plugins_do(cache_env, tmp_path):
    env = dict(cache_env, AWS_ACCESS_KEY_ID="AKIDEXAMPLE", AWS_SECRET_ACCESS_KEY="x")
    (tmp_path / ".tencentcloud").mkdir()
    assert same_as_full(["providers"], env)
    served, out = fast_cli(["providers"], env, width=200)
    assert served and "yes (env AWS_ACCESS_KEY_ID)" in out


def test_fast_providers_declines_with_plugin_switches(cache_env):
    assert not same_as_full(["providers"], dict(cache_env, CLOUDBROKER_DISABLE_PLUGINS="aws"))


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["--help"], ["quote", "--help"], []])
def test_a_help_page_is_replayed_byte_for_byte(clean_env, tmp_path, argv):
    env = dict(clean_env, COLUMNS="90")
    probe = (
        "import sys\n"
        f"sys.argv = ['cloudbroker', *{argv!r}]\n"
        "try:\n"
        "    from cloudbroker.cli import main; main()\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
        "print('TYPER=' + str('typer' in sys.modules), file=sys.stderr)\n"
    )

    def run(cache: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", probe],
            capture_output=True,
            text=True,
            env=dict(env, CLOUDBROKER_CACHE=str(cache)),
            check=True,
        )

    first, second = run(tmp_path / "cache"), run(tmp_path / "cache")
    (tmp_path / "file").write_text("not a folder: nothing is cached")
    typer_help = run(tmp_path / "file")
    assert first.stdout == second.stdout == typer_help.stdout
    assert "Usage: cloudbroker" in first.stdout
    assert "TYPER=True" in first.stderr and "TYPER=False" in second.stderr
    assert "TYPER=True" in typer_help.stderr


def test_the_help_cache_key_changes_with_what_the_page_depends_on(monkeypatch):
    from cloudbroker.cli import help_cache

    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BytesIO(), encoding="utf-8"))
    monkeypatch.setenv("COLUMNS", "80")
    at_80 = help_cache.key(["--help"])
    assert at_80 is not None and help_cache.key(["--help"]) == at_80
    monkeypatch.setenv("COLUMNS", "81")
    assert help_cache.key(["--help"]) not in (None, at_80)
    monkeypatch.setenv("NO_COLOR", "1")
    assert help_cache.key(["--help"]) != help_cache.key(["quote", "--help"])
    assert help_cache.key(["quote", "--gpu", "A100", "--help"]) is None  # options: not cached
