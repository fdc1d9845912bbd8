"""The agent the launch preamble installs on every placement's instance.

:mod:`.notice_agent` is the script itself (standard library only, it runs on the cloud's
image); this module renders what the preamble needs to install and start it: the script,
compressed (user data is small: Tencent and AWS accept 16 KB), and the environment that
points it at the cloud's notice (the provider's ``spot_notice`` hook), the job's notice file
and signal, and the checkpoints.
"""

from __future__ import annotations

import ast
import base64
import gzip
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


@cache
def script() -> str:
    """The agent's source without its docstrings (they are for readers of this package)."""
    tree = ast.parse(resources.files(__package__).joinpath("notice_agent.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                node.body = node.body[1:] or [ast.Pass()]
    return "#!/usr/bin/env python3\n" + ast.unparse(tree) + "\n"


def packed(text: str) -> str:
    """``text`` gzip'd (mtime 0: the same bytes every time), in Base64: the preamble writes
    it with ``base64 -d | gunzip``."""
    return base64.b64encode(gzip.compress(text.encode(), mtime=0)).decode("ascii")


def environment(
    provider: str, notice: SpotNotice | None, settings: Mapping[str, Any], metadata: str | None
) -> dict[str, str]:
    """The agent's settings, exported by the preamble; ``metadata`` overrides the notice's
    service address (the sandbox's local one)."""
    env = {
        "CLOUDBROKER_PROVIDER": provider,
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


def install_lines() -> list[str]:
    """Preamble lines that write the agent and start it beside the job (``$$``: the shell
    that ``exec``s the job, so the job keeps its pid); a missing python3 is said, not fatal."""
    return [
        f"mkdir -p {CHECKPOINT_DIR}",
        f"base64 -d <<'CBAGENT' | gunzip > {AGENT_PATH}",
        packed(script()),
        "CBAGENT",
        "if command -v python3 >/dev/null; then",
        f"  python3 {AGENT_PATH} $$ &",
        "else",
        '  echo "cloudbroker: python3 not found: no notice agent (reclaims seen by polling)" >&2',
        "fi",
    ]


def early_warning(leads: Mapping[str, int], polled: Sequence[str]) -> str:
    """One line: which clouds warn their instances of a spot reclaim and how early (``leads``,
    from their ``spot_notice`` hooks), and which do not (``polled``)."""
    warned = ", ".join(f"{p} {seconds} s" for p, seconds in leads.items())
    said = "spot reclaim warning on the instance: " + (warned or "none")
    if polled:
        said += f"; {', '.join(polled)}: none (reclaim seen by polling its API)"
    return said
