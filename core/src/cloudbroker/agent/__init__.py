"""The agent the launch preamble installs on every placement's instance.

:mod:`.notice_agent` is the script itself (standard library only, it runs on the cloud's
image's ``python3``, 3.6 or newer); this module renders what the preamble needs to install
and start it: the script, compressed (user data is small: Tencent and AWS accept 16 KB), in
a form Python 3.6 runs (:func:`script`), the environment that points it at the cloud's
notice (the provider's ``spot_notice`` hook), the job's notice file and signal, the
checkpoints and the restarts allowed, and the preamble's lines that start it with the job,
or run the job and report it without the agent where the image has no python3 3.6+.
"""

from __future__ import annotations

import ast
import base64
import gzip
import os
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

from cloudbroker.models import SpotNotice

#: The agent's marker beside the checkpoints (its notice and GPU summary); never a checkpoint.
MARKER = "cloudbroker-agent.json"
#: The watcher's request for a last checkpoint, beside the checkpoints; never a checkpoint.
REQUEST = "cloudbroker-request.json"
#: Where the preamble puts the agent, the notice file the job may poll, the local checkpoints.
AGENT_PATH = "/opt/cloudbroker/agent.py"
NOTICE_FILE = "/opt/cloudbroker/notice.json"
CHECKPOINT_DIR = "/opt/cloudbroker/checkpoints"
#: ``[providers.<cloud>]`` settings the agent reads (the sandbox shortens the periods).
SIGNAL_SETTING = "notice_signal"  # default USR1; "none": the notice file only
POLL_SETTING = "agent_poll_seconds"  # default 5 (AWS: "check for these warnings every 5 s")
GPU_SETTING = "gpu_sample_seconds"  # default 60
#: The oldest python3 the agent runs on (Alibaba Cloud Linux 3 and TencentOS 3 ship 3.6).
PYTHON_MIN = (3, 6)


class _Shipped(ast.NodeTransformer):
    """What :func:`script` takes out: docstrings (for readers of this package), annotations
    (for mypy; before 3.9 ``dict[str, Any]`` fails where it is evaluated, at ``def``) and the
    ``__future__`` import that defers them (3.7+: a SyntaxError on 3.6)."""

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.ImportFrom | None:
        return None if node.module == "__future__" else node

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.annotation = None
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.stmt:
        if node.value is None:
            return ast.Pass()
        return ast.Assign(targets=[node.target], value=node.value, lineno=node.lineno)

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.FunctionDef):
            node.returns = None
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                node.body = node.body[1:] or [ast.Pass()]
        return super().generic_visit(node)


@cache
def script() -> str:
    """The agent's source as it is shipped: Python 3.6 runs it (see :class:`_Shipped`)."""
    tree = ast.parse(resources.files(__package__).joinpath("notice_agent.py").read_text())
    return "#!/usr/bin/env python3\n" + ast.unparse(_Shipped().visit(tree)) + "\n"


def packed(text: str) -> str:
    """``text`` gzip'd (mtime 0: the same bytes every time), in Base64: the preamble writes
    it with ``base64 -d | gunzip``."""
    return base64.b64encode(gzip.compress(text.encode(), mtime=0)).decode("ascii")


def environment(
    provider: str,
    notice: SpotNotice | None,
    settings: Mapping[str, Any],
    metadata: str | None,
    restarts: int = 0,
) -> dict[str, str]:
    """The agent's settings, exported by the preamble; ``metadata`` overrides the notice's
    service address (the sandbox's local one); ``restarts``: how many times a job that exits
    non-zero on its own is started again (the plan's ``on_failure``)."""
    env = {
        "CLOUDBROKER_PROVIDER": provider,
        "CLOUDBROKER_RESTARTS": str(int(restarts)),
        "CLOUDBROKER_NOTICE_FILE": NOTICE_FILE,
        "CLOUDBROKER_NOTICE_SIGNAL": str(settings.get(SIGNAL_SETTING, "USR1")),
        "CLOUDBROKER_CHECKPOINT_DIR": CHECKPOINT_DIR,
        "CLOUDBROKER_AGENT_POLL": str(settings.get(POLL_SETTING, 5)),
        "CLOUDBROKER_GPU_EVERY": str(settings.get(GPU_SETTING, 60)),
    }
    if notice is not None:
        base = metadata or notice.endpoint
        env["CLOUDBROKER_NOTICE_URL"] = base + notice.path
        env["CLOUDBROKER_NOTICE_FORMAT"] = notice.format
        if notice.token is not None:
            env["CLOUDBROKER_NOTICE_TOKEN_URL"] = base + notice.token.path
            env["CLOUDBROKER_NOTICE_TOKEN_TTL"] = notice.token.ttl_header
            env["CLOUDBROKER_NOTICE_TOKEN_HEADER"] = notice.token.header
    return env


#: Reports the job where no agent runs (bash, sourced with ``cb_marker`` set, and
#: ``cb_error`` saying why before :func:`cb_report` is called): ``cb_report TRIES`` writes a
#: minimal marker (``agent_error``; ``gpu.error``: never read as idle) with the ``job`` object
#: of the ``cb_*`` variables, as the agent reports it, and uploads it with the instance's
#: rclone, TRIES tries 10 s apart. Times from bash itself: an image may lack ``date``.
REPORT_SH = r"""printf -v cb_started '%(%s)T' -1
cb_restarts=${CLOUDBROKER_RESTARTS:-0}
cb_flags="--contimeout 5s --timeout 15s --retries 1"
cb_state=running cb_runs=0 cb_code=null cb_exits= cb_ended=null cb_ckpt=null cb_up=false cb_errors=
cb_report() {  # $1: tries, 10 s apart
  printf -v cb_now '%(%s)T' -1
  cat > "$cb_marker" <<CBMARKER
{"version": 1, "cloud": "$CLOUDBROKER_PROVIDER", "side": "$CLOUDBROKER_ROLE_SIDE",
 "started_at": $cb_started, "written_at": $cb_now, "gpu": {"error": "no agent: $cb_error"},
 "notice": null, "checkpoint_request": null, "agent_error": "$cb_error",
 "job": {"state": "$cb_state", "runs": $cb_runs, "restarts": $cb_restarts, "exit_code": $cb_code,
  "exits": [$cb_exits], "ended_at": $cb_ended, "checkpoint": $cb_ckpt, "uploaded": $cb_up,
  "errors": [$cb_errors]}}
CBMARKER
  for ((cb_try = 1; cb_try <= $1; cb_try++)); do
    rclone copyto "$cb_marker" "$CLOUDBROKER_CHECKPOINT_URI/${cb_marker##*/}" $cb_flags && return
    [ "$cb_try" -lt "$1" ] && sleep 10
  done
  echo "cloudbroker: cannot reach storage, the job's $cb_state not reported" >&2
  return 1
}
"""
#: The preamble's way without the agent (bash, sourced with ``cb_job``, ``cb_dir`` and
#: ``cb_marker`` set, after :data:`REPORT_SH`): it says why in the log and in the marker,
#: runs the job with the restarts allowed, and on its end uploads the newest checkpoint and
#: reports the ``job`` object as the agent does (exit codes as the shell gives them: a
#: signal N is 128 + N).
WITHOUT_AGENT = r"""cb_found=$(python3 -V 2>&1) || cb_found="no python3 on PATH"
cb_error="python3 3.6+ not found on the image: ${cb_found//[\"\\]/}"
echo "cloudbroker: $cb_error; the job runs without the agent (no notice, no GPU samples)" >&2
while :; do
  cb_runs=$((cb_runs + 1)) cb_state=running
  cb_report 1
  "$cb_job"
  cb_code=$?
  printf -v cb_now '%(%s)T' -1
  cb_exits="${cb_exits:+$cb_exits, }[$cb_now, $cb_code]"
  if [ "$cb_code" = 0 ]; then cb_state=succeeded; break; fi
  if [ "$cb_runs" -gt "$cb_restarts" ]; then cb_state=failed; break; fi
  echo "cloudbroker: the job exited $cb_code; restarting it ($cb_runs of $cb_restarts)" >&2
done
echo "cloudbroker: the job exited $cb_code: $cb_state" >&2
printf -v cb_ended '%(%s)T' -1
cb_newest=$(ls -t "$cb_dir" | head -n 1)
cb_newest=${cb_newest//[\"\\]/}
if [ -n "$cb_newest" ]; then
  cb_ckpt="\"$cb_newest\""
  if rclone copyto "$cb_dir/$cb_newest" "$CLOUDBROKER_CHECKPOINT_URI/$cb_newest" $cb_flags; then
    cb_up=true
  else
    cb_errors="\"upload of $cb_newest failed\""
  fi
fi
cb_report 30
exit $cb_code
"""


def install_lines(job: str, fetched: bool = False) -> list[str]:
    """Preamble lines that write the agent and run ``job`` under it (``exec``: the agent is
    the instance's process, it exits with the job's code); where the image's python3 is
    missing or older than :data:`PYTHON_MIN`, the job runs without it (:data:`WITHOUT_AGENT`:
    its paths are set outside the packed text, where the sandbox can move them).
    ``fetched``: the agent is at :data:`AGENT_PATH` already (fetched from the bucket)."""
    tools = os.path.dirname(AGENT_PATH)
    written = [f"base64 -d <<'CBAGENT' | gunzip > {AGENT_PATH}", packed(script()), "CBAGENT"]
    return [
        f"mkdir -p {CHECKPOINT_DIR}",
        *([] if fetched else written),
        f"if python3 -c 'import sys; sys.exit(sys.version_info < {PYTHON_MIN})' 2>/dev/null; then",
        f"  exec python3 {AGENT_PATH} {job}",
        "fi",
        f"base64 -d <<'CBNOAGENT' | gunzip > {tools}/without-agent.sh",
        packed(REPORT_SH + WITHOUT_AGENT),
        "CBNOAGENT",
        f"cb_job={job} cb_dir={CHECKPOINT_DIR} cb_marker={tools}/{MARKER}",
        f". {tools}/without-agent.sh",
    ]


def early_warning(leads: Mapping[str, int], polled: Sequence[str]) -> str:
    """One line: which clouds warn their instances of a spot reclaim and how early (``leads``,
    from their ``spot_notice`` hooks), and which do not (``polled``)."""
    warned = ", ".join(f"{p} {seconds} s" for p, seconds in leads.items())
    said = "spot reclaim warning on the instance: " + (warned or "none")
    if polled:
        said += f"; {', '.join(polled)}: none (reclaim seen by polling its API)"
    return said
