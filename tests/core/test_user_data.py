"""The launch preamble gets storage credentials from the instance's role, as each cloud gives them.

Each built-in provider's preamble is rendered and run with bash against that cloud's metadata
service as the sandbox serves it (paths, tokens and answers from the cloud's documentation,
written independently of the providers' recipes), with a stand-in ``rclone`` that prints the
environment it was given: the job's ``rclone`` must get the role's key, secret and session
token for the ``ckpt`` remote, and nothing secret may be in the user data itself.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import SecretStr

from cloudbroker.models import InstanceCredentials, StorageRemote
from cloudbroker.plugins.launching import UserDataTooLarge, user_data
from cloudbroker.sandbox.instances import ProcessRunner, localise
from cloudbroker.sandbox.metadata import Credentials, MetadataServer
from cloudbroker.sandbox.processes import PidBook

CLOUDS = {
    "aliyun": ("cloudbroker_aliyun.storage", {"provider": "Alibaba", "endpoint": "oss.example"}),
    "tencent": ("cloudbroker_tencent.storage", {"provider": "TencentCOS", "endpoint": "cos.ex"}),
    "huawei": ("cloudbroker_huawei.storage", {"provider": "HuaweiOBS", "region": "cn-north-4"}),
    "aws": ("cloudbroker_aws.storage", {"provider": "AWS", "region": "us-east-1"}),
}  # fmt: skip
# Characters real STS answers carry ('/', '+', '='), which a careless parser would mangle.
ROLE_CREDENTIALS = Credentials(
    key="STS.NTx9Yh+a",
    secret="s3cr/et+KEY=",
    token="CAIS/tok+en==",
    expires=datetime.now(UTC) + timedelta(hours=1),
)
JOB = "#!/bin/sh\nrclone lsf ckpt:run\n"
FAKE_RCLONE = """#!/bin/sh
echo "args: $*"
env | grep '^RCLONE_CONFIG_CKPT_' | sort
"""
#: The tests that run the preamble (bash, curl, sed) as a process.
runs = pytest.mark.slow


def recipe(cloud: str) -> InstanceCredentials:
    module = pytest.importorskip(CLOUDS[cloud][0])
    return module.INSTANCE_CREDENTIALS


def remote(cloud: str) -> StorageRemote:
    return StorageRemote(
        options=CLOUDS[cloud][1], bucket="ckpt", path="run", instance_credentials=recipe(cloud)
    )


@pytest.fixture
def instance(tmp_path: Path):
    """Runs user data as a sandbox instance would: under a root, with no credentials."""
    tools = tmp_path / "image-bin"
    tools.mkdir()
    (tools / "rclone").write_text(FAKE_RCLONE)
    (tools / "rclone").chmod(0o755)
    (tmp_path / "root" / "etc").mkdir(parents=True)

    def run(script: str) -> subprocess.CompletedProcess[str]:
        path = tmp_path / "user-data"
        path.write_text(localise(script, tmp_path / "root"))
        env = {"PATH": f"{tools}{os.pathsep}/usr/bin{os.pathsep}/bin", "HOME": str(tmp_path),
               "CLOUDBROKER_REPORT_SECONDS": "0"}  # the agent's last report: one try  # fmt: skip
        return subprocess.run(
            ["bash", str(path)], env=env, capture_output=True, text=True, timeout=60
        )

    return run


def given(output: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in output.splitlines() if "=" in line)


@pytest.fixture
def served():
    servers: list[MetadataServer] = []

    def serve(cloud: str, role: str = "cloudbroker-sandbox") -> MetadataServer:
        servers.append(MetadataServer(cloud, lambda: ROLE_CREDENTIALS, role=role).start())
        return servers[-1]

    yield serve
    for server in servers:
        server.stop()


@runs
@pytest.mark.parametrize("cloud", list(CLOUDS))
def test_the_jobs_rclone_gets_the_role_credentials_from_the_metadata_service(
    cloud, instance, served
):
    server = served(cloud)
    settings = {"metadata_endpoint": server.url}
    script = user_data("pl-1", "primary", remote(cloud), JOB, settings)
    for secret in (ROLE_CREDENTIALS.key, ROLE_CREDENTIALS.secret, ROLE_CREDENTIALS.token):
        assert secret not in script
    assert "ENV_AUTH" not in script

    done = instance(script)

    assert done.returncode == 0, done.stderr
    env = given(done.stdout)
    assert env["RCLONE_CONFIG_CKPT_ACCESS_KEY_ID"] == ROLE_CREDENTIALS.key
    assert env["RCLONE_CONFIG_CKPT_SECRET_ACCESS_KEY"] == ROLE_CREDENTIALS.secret
    assert env["RCLONE_CONFIG_CKPT_SESSION_TOKEN"] == ROLE_CREDENTIALS.token
    assert env["RCLONE_CONFIG_CKPT_PROVIDER"] == CLOUDS[cloud][1]["provider"]
    assert env["RCLONE_CONFIG_CKPT_TYPE"] == "s3"
    assert "args: lsf ckpt:run" in done.stdout  # the real rclone ran, with the job's arguments


def test_the_cloud_address_is_the_default_and_the_setting_only_overrides_it():
    script = user_data("pl-1", "primary", remote("aliyun"), JOB)
    assert "${CLOUDBROKER_METADATA_ENDPOINT:-http://100.100.100.200}" in script
    assert "export CLOUDBROKER_METADATA_ENDPOINT" not in script
    tencent = user_data("pl-1", "primary", remote("tencent"), JOB)
    assert "${CLOUDBROKER_METADATA_ENDPOINT:-http://metadata.tencentyun.com}" in tencent


@runs
def test_a_configured_role_is_asked_for_instead_of_the_attached_one(instance, served):
    server = served("tencent", role="ckpt-writer")
    settings = {"metadata_endpoint": server.url, "instance_role": "ckpt-writer"}
    done = instance(user_data("pl-1", "primary", remote("tencent"), JOB, settings))
    assert done.returncode == 0, done.stderr
    assert given(done.stdout)["RCLONE_CONFIG_CKPT_ACCESS_KEY_ID"] == ROLE_CREDENTIALS.key

    settings["instance_role"] = "no-such-role"
    done = instance(user_data("pl-1", "primary", remote("tencent"), JOB, settings))
    assert done.returncode != 0
    assert "no credentials: GET" in done.stderr and "/no-such-role failed" in done.stderr
    assert "args:" not in done.stdout  # rclone never ran without credentials


@runs
def test_without_a_role_the_job_fails_with_one_line_and_no_secret(instance, served):
    server = served("aws", role="")  # an instance profile without a role
    done = instance(
        user_data("pl-1", "primary", remote("aws"), JOB, {"metadata_endpoint": server.url})
    )
    assert done.returncode != 0
    assert "cloudbroker rclone: no role attached to this instance" in done.stderr
    assert ROLE_CREDENTIALS.secret not in done.stderr + done.stdout


@runs
def test_imdsv2_tokens_are_sent_and_a_missing_token_is_refused(instance, served):
    server = served("aws")
    assert server.get("/latest/meta-data/iam/security-credentials/", None)[0] == 401
    done = instance(
        user_data("pl-1", "primary", remote("aws"), JOB, {"metadata_endpoint": server.url})
    )
    assert done.returncode == 0, done.stderr  # so the preamble asked for a token first


@runs
def test_an_unreachable_metadata_service_ends_in_a_bounded_clear_error(instance):
    settings = {"metadata_endpoint": "http://127.0.0.1:9"}  # discard: nothing listens
    done = instance(user_data("pl-1", "primary", remote("huawei"), JOB, settings))
    assert done.returncode != 0
    assert "no credentials: GET http://127.0.0.1:9/openstack/latest/securitykey failed" in (
        done.stderr
    )


def test_a_remote_without_a_recipe_keeps_rclones_env_auth():
    plain = StorageRemote(options={"provider": "Other"}, bucket="b", path="p")
    script = user_data("pl-1", "primary", plain, JOB, {"metadata_endpoint": "http://x"})
    assert "RCLONE_CONFIG_CKPT_ENV_AUTH=true" in script
    assert "bin/rclone" not in script and "METADATA" not in script


def test_recipes_that_could_not_be_written_into_a_script_are_refused():
    fields = {"access_key_id": "Key", "secret_access_key": "Secret"}
    base = {"service": "x", "endpoint": "http://1.2.3.4", "source": "https://example.com"}
    with pytest.raises(ValueError, match="path"):
        InstanceCredentials(**base, path='/x"; rm -rf /', fields=fields)
    with pytest.raises(ValueError, match="roles_path"):
        InstanceCredentials(**base, path="/creds/{role}", fields=fields)
    with pytest.raises(ValueError, match="secret_access_key"):
        InstanceCredentials(**base, path="/c", fields={"access_key_id": "Key"})
    with pytest.raises(ValueError, match="plain words"):
        InstanceCredentials(**base, path="/c", fields={**fields, "session_token": "a b"})


def test_every_builtin_provider_gives_a_recipe_citing_its_documentation():
    for cloud, (module, _) in CLOUDS.items():
        found = importlib.util.find_spec(module.rsplit(".", 1)[0])
        if found is None:
            continue
        recipe = importlib.import_module(module).INSTANCE_CREDENTIALS
        assert recipe.source.startswith("https://"), cloud
        assert {"access_key_id", "secret_access_key", "session_token"} == recipe.fields.keys()


def test_a_sandbox_instance_is_given_no_credentials(tmp_path):
    runner = ProcessRunner(tmp_path, "aliyun", 1.0, PidBook(tmp_path))
    env = runner.environment(tmp_path, "i-1")
    assert not [name for name in env if name.startswith(("AWS_", "ALIBABA_", "RCLONE_"))]


def test_the_readme_job_staged_fits_the_16_kb_of_tencent_and_aws_with_room_to_spare():
    from cloudbroker.plugins.launching import check_user_data
    from cloudbroker.storage.staging import Staged

    remote = StorageRemote(
        options=CLOUDS["tencent"][1],
        secrets={"access_key_id": SecretStr("A" * 36), "secret_access_key": SecretStr("s")},
        instance_endpoints={"ap-guangzhou": "cos-internal.ap-guangzhou.tencentcos.cn"},
        bucket="ckpt-1250000000",
        path="run",
        instance_credentials=recipe("tencent"),
    )
    train = (Path(__file__).parents[2] / "examples/train/train.py").read_text()
    fetched = {
        stem: Staged(f".cloudbroker/{stem}-0123456789abcdef.gz", "ab" * 32).download(
            remote, "ap-guangzhou"
        )
        for stem in ("agent", "job", "rclone-linux-amd64")
    }
    rclone = fetched.pop("rclone-linux-amd64")
    inline = user_data("pl-1", "a", remote, train, provider="tencent", rclone=rclone)
    staged = user_data(
        "pl-1", "a", remote, train, provider="tencent", rclone=rclone, fetched=fetched
    )
    with pytest.raises(UserDataTooLarge):
        check_user_data(inline, limit=16 * 1024, provider="tencent")
    # Base64 (Tencent's count) and raw (AWS's): with 4 KB left for longer endpoints and keys
    check_user_data(staged, limit=12 * 1024, provider="tencent")
    check_user_data(staged, limit=12 * 1024, provider="aws", encoded=False)


#: Each cloud's limit as its adapter checks it before any call, and how it counts: bytes of
#: Base64 (Tencent) or of the text (AWS, Aliyun, Huawei; sources beside each constant).
LIMITS = {"tencent": (16 * 1024, True), "aws": (16 * 1024, False)}
LIMITS |= {"aliyun": (16 * 1024, False), "huawei": (32 * 1024, False)}


def adapter_check(cloud: str, text: str) -> None:
    """The adapter's own check of ``text`` as user data: its request building, no call."""
    from cloudbroker.plugins.launching import launch_request

    settings = {"image": "img-1", "vpc": "vpc-1", "subnet": "subnet-1"}
    request = launch_request(
        cloud, settings, region="r-1", instance_type="t", key="cb-1", user_data=text
    )
    if cloud == "aws":
        importlib.import_module("cloudbroker_aws.instances").run_params(
            request, "/dev/x", "s", None
        )
    elif cloud == "huawei":
        importlib.import_module("cloudbroker_huawei.instances").server_spec(request)
    elif cloud == "aliyun":
        importlib.import_module("cloudbroker_aliyun.instances")._user_data(text)
    else:
        importlib.import_module("cloudbroker_tencent.instances")._user_data(text)


@pytest.mark.parametrize("cloud", list(LIMITS))
def test_each_adapter_refuses_user_data_over_its_clouds_limit_as_the_cloud_counts_it(cloud):
    pytest.importorskip(f"cloudbroker_{cloud}.instances")
    limit, in_base64 = LIMITS[cloud]
    most = limit // 4 * 3 if in_base64 else limit  # the longest text the cloud takes
    adapter_check(cloud, "x" * most)
    with pytest.raises(UserDataTooLarge) as refused:
        adapter_check(cloud, "x" * (most + 1))
    size = 4 * -(-(most + 1) // 3) if in_base64 else most + 1
    form = "in Base64" if in_base64 else "before Base64"
    assert str(refused.value).endswith(
        f"the user data (startup script) is {size} bytes {form}; {cloud} accepts at most {limit}"
    )
