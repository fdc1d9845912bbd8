"""Building launch requests and their user data from the job and the per-provider settings.

The broker and ``cloudbroker launch``-style commands build a
:class:`~cloudbroker.models.LaunchRequest` here, so every provider receives the same,
complete request and a missing setting fails with one line before any API call.
:func:`user_data` is the startup script every instance runs: where this cloud's checkpoints
live, how the instance reaches them with its own role's credentials, then the user's job.
"""

from __future__ import annotations

import base64
import hashlib
import re
import shlex
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cloudbroker.config import require
from cloudbroker.errors import UsageError
from cloudbroker.models import (
    InstanceCredentials,
    LaunchRequest,
    Market,
    NetworkSettings,
    SpotNotice,
    StorageRemote,
)
from cloudbroker.money import Money

if TYPE_CHECKING:
    from cloudbroker.storage.staging import Download

MANAGED_TAG = "cloudbroker-managed"
PLACEMENT_TAG = "cloudbroker-placement"
# The idempotency key as a tag: an instance whose launch answer never came back (the process
# was killed, the response lost) is found by it through ``list_instances``.
KEY_TAG = "cloudbroker-launch"

#: ``[providers.<cloud>]`` settings the preamble reads: the name of the role attached to the
#: instance (default: the one the metadata service lists), and the metadata service's URL
#: (default: the cloud's own; the sandbox sets its local one).
ROLE_SETTING = "instance_role"
METADATA_SETTING = "metadata_endpoint"
#: Exported by the preamble when ``metadata_endpoint`` is set; read on every rclone call.
METADATA_ENV = "CLOUDBROKER_METADATA_ENDPOINT"
#: Where the preamble writes on the instance (the sandbox moves both under its directory).
ENV_FILE = "/etc/cloudbroker.env"
TOOLS_DIR = "/opt/cloudbroker"
#: Where the preamble writes a cloud's scoped storage keys (mode 0600; read by ENV_FILE), on
#: a cloud without instance roles (``StorageRemote.instance_keys``).
KEYS_FILE = "/etc/cloudbroker.keys"
#: The lines around the keys in the user data: :func:`redact` replaces what is between.
KEYS_BEGIN = "# cloudbroker storage keys: begin (redacted wherever cloudbroker shows this)"
KEYS_END = "# cloudbroker storage keys: end"
#: Lifetime asked for a metadata session token: one is fetched per rclone call.
TOKEN_TTL_SECONDS = 300
#: Where the preamble installs the rclone staged in the bucket (:mod:`cloudbroker.storage.
#: staging`): on PATH after the credentials wrapper, whose loop finds it as the real one.
STAGED_DIR = f"{TOOLS_DIR}/staged"
#: Where the preamble writes (or fetches) the user's job.
JOB_PATH = f"{TOOLS_DIR}/job"
#: The staged agent's and job's objects are named by these and their SHA-256.
AGENT_STEM = "agent"
JOB_STEM = "job"
#: A presigned URL's parameters that are credentials (``cloudbroker.storage.presign``):
#: :func:`redact` hides them wherever cloudbroker shows user data.
_SIGNED = re.compile(r"(X-Amz-(?:Signature|Security-Token)=)[^&'\"\s]+")


#: The system disk (GiB) when neither the ``disk_gb`` setting nor the offer's price says.
DEFAULT_DISK_GB = 100


def system_disk_gb(setting: Any, priced_gb: int | None) -> int:
    """The size of the system disk a launch creates; the quote prices the same decision.

    ``disk_gb`` when set; else the size the offer's price already includes
    (:attr:`~cloudbroker.models.PriceSheet.system_disk_gb`, e.g. Aliyun's 40 GiB ESSD), so
    what is launched is what was priced; else :data:`DEFAULT_DISK_GB`.
    """
    if setting is not None:
        return int(setting)
    return priced_gb if priced_gb is not None else DEFAULT_DISK_GB


def idempotency_key(*parts: object) -> str:
    """A client token derived from the request, stable across retries.

    ``cb-`` and 40 hex digits: within every cloud's client-token limit (64 ASCII) and tag
    value limit (Huawei's 43 of ``A-Za-z0-9_.-``), so it doubles as the :data:`KEY_TAG` value.
    """
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()
    return f"cb-{digest[:40]}"


class UserDataTooLarge(UsageError):
    """User data above the cloud's limit: refused before any API call."""


def check_user_data(text: str, *, limit: int, provider: str, encoded: bool = True) -> None:
    """UserDataTooLarge, before any API call, when ``text`` is above the cloud's ``limit``:
    in bytes of its Base64 (``encoded``, Tencent's) or of the text itself (AWS, Aliyun and
    Huawei count it before the encoding)."""
    raw = text.encode("utf-8")
    size = 4 * -(-len(raw) // 3) if encoded else len(raw)
    if size > limit:
        form = "in Base64" if encoded else "before Base64"
        raise UserDataTooLarge(
            f"the user data (startup script) is {size} bytes {form}; {provider} accepts at "
            f"most {limit}",
            provider=provider,
        )


def encoded_user_data(text: str, *, limit: int, provider: str, encoded: bool = True) -> str:
    """Base64 user data, refused before any API call when above the cloud's ``limit``
    (:func:`check_user_data`)."""
    check_user_data(text, limit=limit, provider=provider, encoded=encoded)
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def image_for(settings: Mapping[str, Any], provider: str, region: str) -> str:
    """``images.<region>`` if set, else ``image``; ConfigError naming both when neither is."""
    images = settings.get("images") or {}
    if images.get(region):
        return images[region]
    if settings.get("image"):
        return settings["image"]
    require({}, provider, f"image (or images.{region})")
    raise AssertionError("unreachable")  # pragma: no cover


def launch_request(
    provider: str,
    settings: Mapping[str, Any],
    *,
    region: str,
    instance_type: str,
    key: str,
    zone: str | None = None,
    market: Market = Market.ON_DEMAND,
    max_price: Money | None = None,
    placement_id: str | None = None,
    user_data: str | None = None,
    name: str = "cloudbroker",
    priced_disk_gb: int | None = None,
) -> LaunchRequest:
    """A complete launch request; ``key`` is the idempotency key (see :func:`idempotency_key`);
    ``priced_disk_gb`` the system disk the offer's price includes (see :func:`system_disk_gb`)."""
    tags = {MANAGED_TAG: "true"}
    if placement_id:
        tags[PLACEMENT_TAG] = placement_id
    tags[KEY_TAG] = key
    return LaunchRequest(
        provider=provider,
        region=region,
        zone=zone,
        instance_type=instance_type,
        market=market,
        max_price=max_price,
        idempotency_key=key,
        name=name,
        image=image_for(settings, provider, region),
        network=NetworkSettings(
            vpc=settings.get("vpc"),
            subnet=settings.get("subnet") or settings.get("vswitch"),
            security_group=settings.get("security_group"),
        ),
        key_name=settings.get("key_name"),
        disk_gb=system_disk_gb(settings.get("disk_gb"), priced_disk_gb),
        disk_category=settings.get("disk_category"),
        user_data=user_data,
        tags=tags,
    )


def user_data(
    placement_id: str,
    side: str,
    remote: StorageRemote,
    script: str | None,
    settings: Mapping[str, Any] | None = None,
    notice: SpotNotice | None = None,
    provider: str = "",
    region: str | None = None,
    restarts: int = 0,
    rclone: Download | None = None,
    fetched: Mapping[str, Download] | None = None,
) -> str:
    """The startup script: where checkpoints live on *this* cloud, then the user's job.

    It writes :data:`ENV_FILE` with ``CLOUDBROKER_CHECKPOINT_URI`` and an rclone remote
    ``ckpt`` built from the bucket's non-secret options; an instance launched in ``region``
    reaches the bucket at the remote's endpoint for that region
    (``StorageRemote.instance_endpoints``: an internal one, no public IP needed), else at
    the controller's. When the provider says how its
    instances get credentials (:class:`~cloudbroker.models.InstanceCredentials`), it also
    installs an ``rclone`` wrapper first on ``PATH`` that reads the instance role's
    short-lived credentials from the cloud's metadata service on every call (they rotate)
    and hands them to the real rclone by environment. A cloud without instance roles gives
    scoped keys instead (``instance_keys``): they are written to :data:`KEYS_FILE` (mode
    0600) between :data:`KEYS_BEGIN` and :data:`KEYS_END`, the only secret user data ever
    holds, which :func:`redact` hides wherever cloudbroker shows it. Otherwise rclone's
    ``env_auth`` reads AWS-style credentials from the instance's environment.

    With a job, the agent (:mod:`cloudbroker.agent`) is installed and runs it (on the image's
    python3 3.6+; without one the preamble runs the job and reports it): it restarts a job
    that fails on its own up to ``restarts`` times, polls ``notice`` (the provider's
    ``spot_notice``; None: no notice, GPU samples only), tells the job
    (``CLOUDBROKER_NOTICE_FILE`` and a signal), uploads its newest checkpoint from
    ``CLOUDBROKER_CHECKPOINT_DIR`` and writes the marker the watcher acts on.
    The agent and the job are written gzip'd: Tencent and AWS take 16 KB of user data.

    ``rclone``: the rclone staged in the bucket (a presigned URL and its SHA-256), which the
    preamble fetches, checks and installs in :data:`STAGED_DIR` (:func:`staging_lines`).
    ``fetched``: the agent and the job staged in the bucket too (by :data:`AGENT_STEM` and
    :data:`JOB_STEM`; :func:`fetched_parts`), where inline they pass the cloud's limit: the
    preamble fetches them the same way, and where it cannot, says so and reports the job
    failed (:data:`_STAGE_SH`), so that the watcher ends the placement.
    """
    from cloudbroker import agent

    settings = settings or {}
    options = dict(remote.options)
    if region in remote.instance_endpoints:
        options["endpoint"] = remote.instance_endpoints[region]
    env = {
        "CLOUDBROKER_PLACEMENT": placement_id,
        "CLOUDBROKER_ROLE_SIDE": side,
        "CLOUDBROKER_CHECKPOINT_URI": f"ckpt:{remote.bucket}/{remote.path}".rstrip("/"),
        "RCLONE_CONFIG_CKPT_TYPE": remote.backend,
        **{f"RCLONE_CONFIG_CKPT_{k.upper()}": v for k, v in sorted(options.items())},
        # The bucket is the user's own (named at place): never CreateBucket, which an instance
        # role need not be allowed and some clouds refuse without a location constraint; a
        # missing bucket fails the job's first upload with NoSuchBucket instead.
        "RCLONE_CONFIG_CKPT_NO_CHECK_BUCKET": "true",
    }
    recipe = remote.instance_credentials
    if remote.instance_keys:
        pass  # read from KEYS_FILE, sourced by ENV_FILE below
    elif recipe is None:
        env["RCLONE_CONFIG_CKPT_ENV_AUTH"] = "true"
    elif settings.get(METADATA_SETTING):
        env[METADATA_ENV] = settings[METADATA_SETTING]
    if script:
        metadata = settings.get(METADATA_SETTING)
        env.update(agent.environment(provider, notice, settings, metadata, restarts))
    exports = [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
    if script and fetched:
        fetched = {stem: fetched[stem] for stem in (AGENT_STEM, JOB_STEM)}
    else:
        fetched = None
    if rclone is not None:
        exports.append(f"export PATH={STAGED_DIR}:$PATH")
    lines = ["#!/bin/bash", f"# cloudbroker placement {placement_id} ({side})"]
    if remote.instance_keys:
        keys = {
            f"RCLONE_CONFIG_CKPT_{k.upper()}": v.get_secret_value()
            for k, v in sorted(remote.instance_keys.items())
        }
        lines += [
            KEYS_BEGIN,
            f"(umask 077 && cat > {KEYS_FILE}) <<'CBKEYS'",
            *(f"export {k}={shlex.quote(v)}" for k, v in keys.items()),
            "CBKEYS",
            KEYS_END,
        ]
        exports.append(f". {KEYS_FILE}")
    if recipe is not None:
        exports.append(f"export PATH={TOOLS_DIR}/bin:$PATH")
        lines += [
            f"mkdir -p {TOOLS_DIR}/bin",
            f"cat > {TOOLS_DIR}/bin/rclone <<'CBRCLONE'",
            credentials_script(recipe, settings.get(ROLE_SETTING)),
            "CBRCLONE",
            f"chmod +x {TOOLS_DIR}/bin/rclone",
        ]
    lines += [f"cat > {ENV_FILE} <<'CBENV'", *exports, "CBENV", f". {ENV_FILE}"]
    if rclone is not None or fetched:
        lines += staging_lines(rclone, fetched or {})
    if script:
        lines += [f"mkdir -p {TOOLS_DIR}"]
        if not fetched:
            lines += [f"base64 -d <<'CBJOB' | gunzip > {JOB_PATH}", agent.packed(script), "CBJOB"]
        lines += [f"chmod +x {JOB_PATH}", *agent.install_lines(JOB_PATH, fetched=bool(fetched))]
    return "\n".join(lines) + "\n"


def fetched_parts(script: str) -> dict[str, bytes]:
    """What :func:`user_data`'s ``fetched`` stages in the bucket, by stem: the agent as it is
    shipped, and the job."""
    from cloudbroker import agent

    return {AGENT_STEM: agent.script().encode(), JOB_STEM: script.encode()}


def redact(text: str) -> str:
    """User data with the storage keys' block (see :func:`user_data`) replaced by a note,
    and a presigned URL's signature and session token by ``[redacted]``."""
    text = _SIGNED.sub(r"\1[redacted]", text)
    kept, inside = [], False
    for line in text.splitlines(keepends=True):
        if line.rstrip("\n") == KEYS_BEGIN:
            inside = True
            kept.append(f"# [storage keys redacted: written to {KEYS_FILE}]\n")
        elif line.rstrip("\n") == KEYS_END and inside:
            inside = False
        elif not inside:
            kept.append(line)
    return "".join(kept)


#: Fetches a URL read from stdin (never argv, where any user of the instance sees it) into
#: the file argv[1]: 3 tries, 60 s without data ends one. Python 3.6's standard library.
_FETCH_PY = (
    "import shutil,sys,time,urllib.request as u\n"
    "url=sys.stdin.read()\n"
    "for _ in range(3):\n"
    " try:\n"
    '  with u.urlopen(url,timeout=60) as r,open(sys.argv[1],"wb") as f:'
    "shutil.copyfileobj(r,f);sys.exit(0)\n"
    " except Exception:time.sleep(2)\n"
    "sys.exit(1)"
)
_SHA256_PY = (
    'import hashlib,sys;h=hashlib.sha256();f=open(sys.argv[1],"rb")\n'
    'for b in iter(lambda:f.read(1<<20),b""):h.update(b)\n'
    "print(h.hexdigest())"
)


_fail = ' || {{ echo "{} failed"; return 1; }}'.format
#: The preamble's fetching from the bucket, sourced with ``cb_d`` (where rclone goes) and
#: ``cb_marker`` set; each step then sets ``cb_url`` and calls :func:`staging_lines`' function
#: with the SHA-256. ``cb_get FILE SHA`` fetches the gzip'd object at ``cb_url`` with curl,
#: else wget, else python3's urllib (what the image has; the URL on stdin), checks its
#: SHA-256 (sha256sum, else python3's hashlib) and gunzips it into FILE. ``cb_rclone`` installs
#: rclone (it must run: ``rclone version``; a binary of another architecture does not), or
#: says why not and the job goes on. ``cb_need WHAT FILE SHA`` fetches the agent or the job:
#: where it cannot, it says why in one line, reports the job failed (``exit_code`` null, the
#: marker's ``agent_error``) with the instance's rclone (:data:`cloudbroker.agent.REPORT_SH`,
#: as the preamble without the agent does), and ends the script: the watcher
#: then ends the placement instead of leaving it billing with nothing running.
_STAGE_SH = "\n".join(
    [
        "cb_fetch() {",
        '  if command -v curl >/dev/null; then printf \'url = "%s"\\n\' "$cb_url" | curl -fsS \\',
        '    --connect-timeout 10 --max-time 600 --retry 3 -K - -o "$1" 2>/dev/null'
        + _fail("curl"),
        "  elif command -v wget >/dev/null; then printf '%s\\n' \"$cb_url\" |",
        f'    wget -q -T 60 -t 3 -O "$1" -i -{_fail("wget")}',
        '  elif command -v python3 >/dev/null; then printf %s "$cb_url" |',
        f'    python3 -c {shlex.quote(_FETCH_PY)} "$1" 2>/dev/null{_fail("python3 urllib")}',
        '  else echo "no curl, wget or python3 to download it"; return 1; fi',
        "}",
        "cb_sha256() {",
        '  if command -v sha256sum >/dev/null; then sha256sum "$1"',
        f'  else python3 -c {shlex.quote(_SHA256_PY)} "$1"; fi 2>/dev/null |',
        '    { read -r h _; echo "$h"; }',
        "}",
        "cb_get() {",
        '  cb_fetch "$1.gz" || return 1',
        f'  [ "$(cb_sha256 "$1.gz")" = "$2" ]{_fail("SHA-256 check")}',
        f'  gunzip -c "$1.gz" > "$1"{_fail("gunzip")}',
        '  rm -f "$1.gz"',
        "}",
        "cb_rclone() {",
        '  if cb_why=$(cb_get "$cb_d/rclone.new" "$1" && chmod +x "$cb_d/rclone.new" &&',
        f'    {{ "$cb_d/rclone.new" version >/dev/null 2>&1{_fail("rclone version")}; }}); then',
        '    mv -f "$cb_d/rclone.new" "$cb_d/rclone"',
        "    echo 'cloudbroker: rclone staged from the bucket'",
        '  else echo "cloudbroker: no rclone from the bucket: $cb_why; the job goes on" >&2; fi',
        "}",
        "cb_need() {",
        '  cb_why=$(cb_get "$2" "$3") && return',
        '  cb_error="the $1 was not fetched from the bucket: ${cb_why//[\\"\\\\]/}"',
        '  echo "cloudbroker: $cb_error; the job is reported failed" >&2',
        '  cb_state=failed cb_errors="\\"$cb_error\\""',
        "  printf -v cb_ended '%(%s)T' -1",
        "  cb_report 3",
        "  exit 1",
        "}",
    ]
)


def staging_lines(rclone: Download | None, fetched: Mapping[str, Download]) -> list[str]:
    """Bash that fetches from the bucket (:data:`_STAGE_SH`): the staged rclone into
    :data:`STAGED_DIR` (where it cannot, one line, never the URL, and the job goes on: it may
    bring its own), then ``fetched``'s agent and job (where one cannot be, the job is
    reported failed and the script ends).

    The steps are written gzip'd to ``stage.sh`` there, as the job is (user data is 16 KB on
    Tencent and AWS), and sourced. Each URL is a shell variable of this script only, unset
    after: never exported, never in a file.
    """
    from cloudbroker import agent

    paths = {AGENT_STEM: agent.AGENT_PATH, JOB_STEM: JOB_PATH}
    lines = [
        f"mkdir -p {STAGED_DIR} {TOOLS_DIR}",
        f"base64 -d <<'CBSTAGE' | gunzip > {STAGED_DIR}/stage.sh",
        agent.packed(agent.REPORT_SH + _STAGE_SH),
        "CBSTAGE",
        f"cb_d={STAGED_DIR} cb_marker={TOOLS_DIR}/{agent.MARKER}",
        f". {STAGED_DIR}/stage.sh",
    ]
    if rclone is not None:
        lines += [f"cb_url={shlex.quote(rclone.url)}", f"cb_rclone {rclone.sha256}"]
    for stem, download in fetched.items():
        lines += [
            f"cb_url={shlex.quote(download.url)}",
            f"cb_need {stem} {paths[stem]} {download.sha256}",
        ]
    return [*lines, "unset cb_url"]


#: Extracts a string value by key from a flat or nested JSON answer (keys are unique).
_FIELD = (
    r"""field() { printf '%s' "$answer" | tr -d '\r\n' """
    r"""| sed -n "s/.*\"$1\"[[:space:]]*:[[:space:]]*\"\([^\"]*\)\".*/\1/p" """
    r"""| sed 's#\\/#/#g'; }"""
)


def credentials_script(recipe: InstanceCredentials, role: str | None = None) -> str:
    """A bash ``rclone`` wrapper: the role's credentials for ``ckpt``, then the real rclone.

    Needs bash, curl and sed on the image. Each call asks the metadata service (at
    ``$CLOUDBROKER_METADATA_ENDPOINT``, else the cloud's own address) for a session token
    where the cloud has them (going on without one if none is given), for the role's name
    unless ``role`` is set, then for the credentials; a failure is one line naming the URL
    that failed, never a secret. The recipe's paths, headers and keys are plain words (the
    model checks them), so they are written into the script as they are.
    """
    lines = [
        "#!/bin/bash",
        f"# rclone with the storage credentials of this instance's {recipe.service}, read from",
        f"# the cloud's metadata service on every call (they rotate); see {recipe.source}",
        "set -uo pipefail",
        f"base=${{{METADATA_ENV}:-{recipe.endpoint}}}",
        'fail() { echo "cloudbroker rclone: $*" >&2; exit 1; }',
        "header=",
        "get() {",
        "  curl -fsS --noproxy '*' --connect-timeout 2 --max-time 10 --retry 2 \\",
        '    ${header:+-H "$header"} "$@"',
        "}",
    ]
    if recipe.token:
        t = recipe.token
        lines += [
            f'if token=$(get -X PUT -H "{t.ttl_header}: {TOKEN_TTL_SECONDS}" '
            f'"$base{t.path}" 2>/dev/null); then',
            f'  header="{t.header}: $token"',
            "fi",
        ]
    if "{role}" in recipe.path:
        if role:
            lines.append(f"role={shlex.quote(role)}")
        else:
            lines += [
                f'url="$base{recipe.roles_path}"',
                'roles=$(get "$url") || fail "no role attached to this instance: GET $url failed"',
                "role=${roles%%$'\\n'*}",
                "role=${role%$'\\r'}",
                '[ -n "$role" ] || fail "no role attached to this instance: GET $url is empty"',
            ]
    lines += [
        f'url="$base{recipe.path.replace("{role}", "$role")}"',
        'answer=$(get "$url") || fail "no credentials: GET $url failed"',
        _FIELD,
    ]
    for option, key in recipe.fields.items():
        name = f"RCLONE_CONFIG_CKPT_{option.upper()}"
        lines += [
            f"{name}=$(field {key})",
            f'[ -n "${name}" ] || fail "no {key} in the answer of GET $url"',
            f"export {name}",
        ]
    lines += [  # the candidates on fd 3: the real rclone keeps the caller's stdin (rcat)
        "while IFS= read -r candidate <&3; do",
        '  [ "$candidate" -ef "$0" ] || exec "$candidate" "$@" 3<&-',
        "done 3< <(type -ap rclone)",
        "fail rclone is not installed",
    ]
    return "\n".join(lines)
