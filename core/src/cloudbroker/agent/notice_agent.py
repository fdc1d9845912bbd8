#!/usr/bin/env python3
"""cloudbroker's agent on a placement's instance: it runs the job, and watches for the spot
reclaim notice and GPU use.

Installed and started by the launch preamble
(:func:`cloudbroker.plugins.launching.user_data`) as ``python3 agent.py JOB``. It runs on
the cloud's image, not in cloudbroker's environment: Python 3.6 or newer (Alibaba Cloud
Linux 3 and TencentOS 3 ship 3.6), standard library only, written in 3.6's constructs; the
annotations are for mypy and :func:`cloudbroker.agent.script` strips them (and the
``__future__`` import) from what it ships. It reaches storage with the instance's own
``rclone`` (the preamble's wrapper: the instance role's credentials, no key of its own).

* **The job.** It starts ``JOB`` as its child (the same stdout and stderr: the instance
  log), restarts it when it exits non-zero on its own, up to ``CLOUDBROKER_RESTARTS`` times,
  and outlives it: at its end for good it uploads the newest checkpoint, writes the marker
  (retrying for ``CLOUDBROKER_REPORT_SECONDS``) and exits with the job's code. The
  marker's ``job`` says how it went (``running``, ``restarting``; final: ``succeeded``,
  ``failed``, or ``stopped`` when it exited after the agent told it to: a notice, the
  watcher's checkpoint request, or the instance's shutdown, SIGTERM, passed on to it).
* **Notice.** Every ``CLOUDBROKER_AGENT_POLL`` seconds while the job runs it asks the
  metadata service for the cloud's reclaim notice (``CLOUDBROKER_NOTICE_URL`` in
  ``CLOUDBROKER_NOTICE_FORMAT``, from the provider's ``spot_notice`` hook; none: no notice
  is polled). On one it (1) writes ``CLOUDBROKER_NOTICE_FILE`` (``deadline``,
  ``seconds_left``) and sends the job ``CLOUDBROKER_NOTICE_SIGNAL`` (``USR1``; ``none``: the
  file only); (2) waits for the job's checkpoint (a new file in
  ``CLOUDBROKER_CHECKPOINT_DIR``, or the job's exit), at most the time left minus a share
  ``CLOUDBROKER_AGENT_MARGIN`` of it; (3) uploads the newest checkpoint there to
  ``CLOUDBROKER_CHECKPOINT_URI``; (4) writes the marker :data:`MARKER` beside the
  checkpoints, which the watcher fails over on at once. Storage that does not answer is
  retried until the deadline and reported in the marker; the job is never waited on beyond
  the bound. A notice after the job ended for good is not read: there is no job to save.
* **Checkpoint request.** The watcher asks for a last checkpoint before it stops a placement
  (the idle guard) by writing :data:`REQUEST` beside the checkpoints; the agent reads it at
  each GPU sample and answers as to a notice: the notice file (``reason``) and the signal, a
  bounded wait (the request's ``wait_seconds``) for a new checkpoint, its upload, and the
  answer in the marker (``checkpoint_request``). A request older than the agent (an earlier
  primary's, replicated) is ignored.
* **GPUs.** Every ``CLOUDBROKER_GPU_EVERY`` seconds it samples ``nvidia-smi
  --query-gpu=utilization.gpu,memory.used,memory.total --format=csv,noheader,nounits`` and
  writes the rolling summary into the same marker (``gpu``: the last samples, or the
  ``error`` saying why there are none, e.g. nvidia-smi is not installed). The watcher's
  idle guard reads it; a missing nvidia-smi is reported, never read as idle.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone
from typing import Any

LOG = logging.getLogger("cloudbroker.agent")

MARKER = "cloudbroker-agent.json"
REQUEST = "cloudbroker-request.json"
UPLOAD_SECONDS = 60  # the bound of the requested checkpoint's upload, and of the answer's
REPORT_SECONDS = 300  # default bound of the final upload and marker (storage may be down)
UTC8 = timezone(timedelta(hours=8))  # Tencent's notice is the instance OS's time in UTC+8
ACTIONS = ("terminate", "stop", "hibernate")  # AWS instance-action's documented values
GPU_QUERY = "utilization.gpu,memory.used,memory.total"
KEEP_SAMPLES = 120
RCLONE_FLAGS = ["--contimeout", "5s", "--timeout", "15s", "--retries", "1"]


def parse(fmt: str, body: str) -> float:
    """The reclaim's time (epoch seconds) in a notice answer; ValueError if malformed.

    ``json-action-time``: ``{"action": "terminate", "time": "2017-09-18T08:22:00Z"}`` (AWS);
    ``iso-utc``: ``2015-01-05T18:02:00Z`` (Aliyun); ``utc8-time``: ``2018-08-18 12:05:33``
    in UTC+8 (Tencent).
    """
    text = body.strip()
    if fmt == "json-action-time":
        answer = json.loads(text)
        if not isinstance(answer, dict) or answer.get("action") not in ACTIONS:
            raise ValueError(f"no action of {', '.join(ACTIONS)} in {text[:80]!r}")
        return _utc(str(answer.get("time", "")))
    if fmt == "iso-utc":
        return _utc(text)
    if fmt == "utc8-time":
        return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC8).timestamp()
    raise ValueError(f"unknown notice format {fmt!r}")


def _utc(text: str) -> float:
    when = datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ")
    return when.replace(tzinfo=timezone.utc).timestamp()  # noqa: UP017 (datetime.UTC: 3.11)


def run_quietly(args: list[str], timeout: float) -> tuple[int, str, str]:
    """``args``' exit code, stdout and stderr, decoded as UTF-8 whatever the locale (Python
    3.6 in the C locale would decode as ASCII and fail on one odd byte)."""
    pipe = subprocess.PIPE  # capture_output= is 3.7+
    done = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=pipe, stderr=pipe, timeout=timeout)
    out, err = (b.decode("utf-8", "replace") for b in (done.stdout, done.stderr))
    return done.returncode, out, err


def gpu_sample() -> dict[str, Any]:
    """One nvidia-smi reading: mean and max utilisation (%), memory (MiB); or the ``error``."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return {"error": "nvidia-smi not found on PATH"}
    try:
        code, out, err = run_quietly(
            [exe, f"--query-gpu={GPU_QUERY}", "--format=csv,noheader,nounits"], 15
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"error": f"nvidia-smi failed: {exc}"}
    if code != 0:
        return {"error": f"nvidia-smi exited {code}: {err.strip()[:120]}"}
    util, used, total = [], [], []
    for line in out.strip().splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != 3 or not cells[0].isdigit():
            return {"error": f"nvidia-smi answered {line[:80]!r}"}
        util.append(int(cells[0]))
        used.append(int(cells[1]) if cells[1].isdigit() else None)
        total.append(int(cells[2]) if cells[2].isdigit() else None)
    if not util:
        return {"error": "nvidia-smi lists no GPU"}
    memory = None if None in used else sum(u for u in used if u is not None)
    return {
        "gpus": len(util),
        "util": round(sum(util) / len(util), 1),
        "util_max": max(util),
        "memory_used_mib": memory,
        "memory_total_mib": None if None in total else sum(t for t in total if t is not None),
    }


class Agent:
    """The agent's state: its settings (environment), the job it runs, the GPU samples."""

    def __init__(self, command: str, env: dict[str, str]) -> None:
        self.command = command
        self.env = env
        self.poll = float(env.get("CLOUDBROKER_AGENT_POLL", "5"))
        self.gpu_every = float(env.get("CLOUDBROKER_GPU_EVERY", "60"))
        self.margin = float(env.get("CLOUDBROKER_AGENT_MARGIN", "0.25"))
        self.report_seconds = float(env.get("CLOUDBROKER_REPORT_SECONDS", str(REPORT_SECONDS)))
        self.uri = env.get("CLOUDBROKER_CHECKPOINT_URI", "")
        self.local = env.get("CLOUDBROKER_CHECKPOINT_DIR", "")
        self.samples: list[list[Any]] = []
        self.gpu_error: str | None = None
        self.started = time.time()
        self.said: set[str] = set()
        self.notice: dict[str, Any] | None = None  # the reclaim notice acted on
        self.answered: dict[str, Any] | None = None  # the last checkpoint request answered
        self.process: subprocess.Popen[bytes] | None = None
        self.told: str | None = None  # why the job was asked to stop: its exit is not a failure
        self.next_gpu = 0.0
        self.job: dict[str, Any] = {
            "state": "running",
            "runs": 0,
            "restarts": int(env.get("CLOUDBROKER_RESTARTS", "0")),
            "exit_code": None,
            "exits": [],
            "ended_at": None,
            "checkpoint": None,
            "uploaded": False,
            "errors": [],
        }

    # -- output -------------------------------------------------------------------------

    def say(self, text: str, once: str | None = None) -> None:
        if once is not None:
            if once in self.said:
                return
            self.said.add(once)
        LOG.info(text)

    def marker(self) -> dict[str, Any]:
        gpu: dict[str, Any] = {"every": self.gpu_every, "samples": self.samples[-KEEP_SAMPLES:]}
        if self.gpu_error:
            gpu["error"] = self.gpu_error
        return {
            "version": 1,
            "cloud": self.env.get("CLOUDBROKER_PROVIDER", ""),
            "side": self.env.get("CLOUDBROKER_ROLE_SIDE", ""),
            "started_at": round(self.started, 3),
            "written_at": round(time.time(), 3),
            "python": platform.python_version(),
            "gpu": gpu,
            "notice": self.notice,
            "checkpoint_request": self.answered,
            "job": self.job,
        }

    def write_marker(self, until: float, retry: bool) -> str | None:
        """Write :data:`MARKER` (with ``retry``: again until ``until``); the last error, None
        once written."""
        local = os.path.join(os.path.dirname(os.path.abspath(__file__)), MARKER)
        with open(local + ".tmp", "w") as out:
            json.dump(self.marker(), out)
        os.replace(local + ".tmp", local)
        while True:
            error = self.rclone(["copyto", local, f"{self.uri}/{MARKER}"], until)
            if error is None or not retry or time.time() + self.poll >= until:
                return error
            time.sleep(self.poll)

    def rclone(self, args: list[str], until: float) -> str | None:
        """One bounded rclone call; None when it worked, else one line why."""
        return self.rclone_out(args, until)[0]

    def rclone_out(self, args: list[str], until: float) -> tuple[str | None, str]:
        """:meth:`rclone`'s answer, and what rclone wrote to stdout."""
        left = max(1.0, until - time.time())
        try:
            code, out, err = run_quietly(["rclone", *args, *RCLONE_FLAGS], left)
        except subprocess.TimeoutExpired:
            return f"rclone {args[0]} did not finish within {left:.0f} s", ""
        except OSError as exc:
            return f"rclone {args[0]}: {exc}", ""
        if code == 0:
            return None, out
        lines = err.strip().splitlines() or [f"exit code {code}"]
        return f"rclone {args[0]}: {lines[-1][:200]}", ""

    # -- the job ------------------------------------------------------------------------

    def spawn(self) -> subprocess.Popen[bytes]:
        """The job, started (a script without ``#!`` runs under ``/bin/sh``, as bash's would)."""
        try:
            return subprocess.Popen([self.command])
        except OSError as exc:
            if exc.errno != errno.ENOEXEC:
                raise
            return subprocess.Popen(["/bin/sh", self.command])

    def run_once(self) -> int:
        """Start the job and watch until it exits: its code (127: it could not be started)."""
        self.job["runs"] += 1
        self.job["state"] = "running"
        try:
            self.process = self.spawn()
        except OSError as exc:
            self.job["errors"].append(f"the job could not be started: {exc}")
            self.say(self.job["errors"][-1])
            return 127
        while True:
            try:
                return self.process.wait(timeout=self.poll)
            except subprocess.TimeoutExpired:
                pass
            try:
                self.watch()
            except Exception as exc:  # a side duty failing never orphans the job
                self.say(f"agent error, the job goes on: {exc!r}", once=type(exc).__name__)

    def job_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def ended(self, code: int) -> bool:
        """Record a run's end; True when it is the job's end for good, else it restarts."""
        job = self.job
        job["exit_code"] = code
        job["exits"].append([round(time.time(), 3), code])
        if self.told:
            job["state"] = "stopped"
        elif code == 0:
            job["state"] = "succeeded"
        elif job["runs"] > job["restarts"]:
            job["state"] = "failed"
        else:
            job["state"] = "restarting"
            self.say(f"the job exited {code}; restarting it ({job['runs']} of {job['restarts']})")
            if self.uri:
                self.write_marker(time.time() + 30, retry=False)
            return False
        self.say(f"the job exited {code}: {job['state']}")
        return True

    def stop_job(self, signum: int, frame: Any) -> None:
        """SIGTERM (the instance shuts down): pass it on; the job's exit is then ``stopped``."""
        self.told = self.told or "SIGTERM"
        if self.job_running() and self.process is not None:
            self.process.send_signal(signal.SIGTERM)

    def newest_checkpoint(self) -> tuple[str, float] | None:
        try:
            entries = [e for e in os.scandir(self.local) if e.is_file()]
        except OSError:
            return None
        if not entries:
            return None
        newest = max(entries, key=lambda e: e.stat().st_mtime)
        return newest.name, newest.stat().st_mtime

    def upload_newest(self, until: float) -> tuple[tuple[str, float] | None, bool, list[str]]:
        """Upload the newest local checkpoint by ``until``: it (name, mtime), whether it is
        up, the errors."""
        newest = self.newest_checkpoint()
        if newest is None or not self.uri:
            return newest, False, []
        src = os.path.join(self.local, newest[0])
        error = self.rclone(["copyto", src, f"{self.uri}/{newest[0]}"], until)
        return newest, error is None, [] if error is None else [f"upload of {newest[0]}: {error}"]

    def finish(self) -> int:
        """The job ended for good: upload its newest checkpoint, write the marker; its code."""
        job = self.job
        job["ended_at"] = round(time.time(), 3)
        until = time.time() + self.report_seconds
        newest, job["uploaded"], errors = self.upload_newest(until)
        job["checkpoint"] = newest[0] if newest else None
        job["errors"] += errors
        if self.uri:
            error = self.write_marker(until, retry=True)
            if error:
                self.say(f"cannot reach storage, the job's end not reported: {error}")
        code = job["exit_code"]
        return 128 - code if code < 0 else code  # killed by signal N: the shell's 128 + N

    # -- notice -------------------------------------------------------------------------

    def notice_deadline(self) -> float | None:
        """The reclaim's time if the metadata service gives a notice now, else None."""
        url = self.env.get("CLOUDBROKER_NOTICE_URL")
        if not url:
            return None
        headers = {}
        token_url = self.env.get("CLOUDBROKER_NOTICE_TOKEN_URL")
        if token_url:
            ask = urllib.request.Request(
                token_url, method="PUT", headers={self.env["CLOUDBROKER_NOTICE_TOKEN_TTL"]: "300"}
            )
            try:
                with urllib.request.urlopen(ask, timeout=5) as answer:
                    headers[self.env["CLOUDBROKER_NOTICE_TOKEN_HEADER"]] = answer.read().decode()
            except (OSError, urllib.error.URLError):
                pass  # the token is optional where the cloud allows it; the GET says if not
        try:
            request = urllib.request.Request(url, headers=headers)
            with urllib.request.urlopen(request, timeout=5) as answer:
                body = answer.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as exc:
            if exc.code != 404:
                self.say(f"notice check {url}: HTTP {exc.code}", once=f"http{exc.code}")
            return None
        except (OSError, urllib.error.URLError) as exc:
            self.say(f"notice check {url} failed: {exc}", once="unreachable")
            return None
        try:
            return parse(self.env.get("CLOUDBROKER_NOTICE_FORMAT", ""), body)
        except ValueError as exc:
            self.say(f"notice answer not understood ({exc}); polling on", once="malformed")
            return None

    def ask_job(
        self, deadline: float, bound: float, reason: str, upload_by: float | None = None
    ) -> dict[str, Any]:
        """Tell the job (the notice file, the signal) it has until ``deadline``, wait until
        ``bound`` at most for its checkpoint (or its exit), upload the newest (by
        ``upload_by``, default the deadline): what happened."""
        noticed = time.time()
        self.told = reason
        path = self.env.get("CLOUDBROKER_NOTICE_FILE")
        if path:
            told = {"deadline": deadline, "seconds_left": deadline - noticed, "reason": reason}
            told["noticed_at"] = noticed
            with open(path + ".tmp", "w") as out:
                json.dump(told, out)
            os.replace(path + ".tmp", path)
        before = self.newest_checkpoint()  # before the signal: a quick job may write at once
        name = self.env.get("CLOUDBROKER_NOTICE_SIGNAL", "USR1").upper()
        name = name[3:] if name.startswith("SIG") else name
        sent = None
        if name != "NONE" and self.process is not None and self.job_running():
            try:
                os.kill(self.process.pid, getattr(signal, "SIG" + name))
                sent = "SIG" + name
            except (AttributeError, OSError) as exc:
                self.say(f"could not send SIG{name} to the job: {exc}")
        exited_at, written_at = None, None
        while time.time() < bound:
            if not self.job_running():
                exited_at = time.time()
                break
            now = self.newest_checkpoint()
            if now and now != before and time.time() - now[1] > min(1.0, self.poll):
                # a new checkpoint, unchanged since: written; a job that stops after it
                # (as it should) is given a moment to, so its stop is known
                written_at = written_at or time.time()
                if time.time() - written_at > max(2.0, 2 * self.poll):
                    break
            time.sleep(min(0.1, self.poll))
        newest, uploaded, errors = self.upload_newest(deadline if upload_by is None else upload_by)
        return {
            "signal": sent,
            "job_exited_at": None if exited_at is None else round(exited_at, 3),
            "checkpoint": newest[0] if newest else None,
            "checkpoint_at": round(newest[1], 3) if newest else None,
            "checkpointed_on_notice": bool(newest and newest != before),
            "uploaded": uploaded,
            "errors": errors,
        }

    def on_notice(self, deadline: float) -> None:
        noticed = time.time()
        left = deadline - noticed
        self.say(f"spot reclaim notice: the instance goes in {left:.1f} s")
        bound = noticed + max(0.0, left) * (1 - self.margin)
        done = self.ask_job(deadline, bound, "spot reclaim notice")
        self.notice = {
            "noticed_at": round(noticed, 3),
            "deadline": round(deadline, 3),
            "lead_seconds": round(left, 3),
        }
        self.notice.update(done)
        error = self.write_marker(deadline, retry=True)
        if error:
            self.say(f"cannot reach storage, no marker written: {error}")
        else:
            self.say(f"marker written; newest checkpoint {done['checkpoint'] or 'none'}")

    # -- the watcher's checkpoint request ------------------------------------------------

    def checkpoint_request(self) -> dict[str, Any] | None:
        """The watcher's :data:`REQUEST` if there is one for this agent not yet answered."""
        until = time.time() + 30
        args = ["cat", self.uri, "--include", "/" + REQUEST, "--max-depth", "1"]
        error, text = self.rclone_out(args, until)
        if error or not text.strip():
            return None
        try:
            request = json.loads(text)
            asked, wait = float(request["requested_at"]), float(request["wait_seconds"])
        except (ValueError, TypeError, KeyError):
            self.say(f"checkpoint request not understood: {text[:80]!r}", once="request")
            return None
        if asked < self.started or (self.answered and self.answered["requested_at"] == asked):
            return None  # an earlier primary's, or answered
        return {"requested_at": asked, "wait_seconds": max(0.0, min(wait, 3600.0))}

    def on_request(self, request: dict[str, Any]) -> None:
        """Ask the job for a checkpoint, as on a notice, and answer in the marker."""
        asked = time.time()
        wait = request["wait_seconds"]
        self.say(f"the watcher asks for a last checkpoint (waiting {wait:g} s at most)")
        until = asked + wait
        done = self.ask_job(until, until, "checkpoint requested", upload_by=until + UPLOAD_SECONDS)
        self.answered = dict(request, asked_job_at=round(asked, 3), **done)
        error = self.write_marker(time.time() + UPLOAD_SECONDS, retry=True)
        if error:
            self.say(f"cannot reach storage, the checkpoint request not answered: {error}")

    # -- the loop -----------------------------------------------------------------------

    def sample(self) -> None:
        reading = gpu_sample()
        if "error" in reading:
            self.gpu_error = reading["error"]
            self.say(reading["error"] + ": GPU utilisation unknown", once="gpu")
            return
        self.gpu_error = None
        self.samples.append(
            [
                round(time.time(), 3),
                reading["util"],
                reading["util_max"],
                reading["memory_used_mib"],
                reading["memory_total_mib"],
                reading["gpus"],
            ]
        )
        del self.samples[:-KEEP_SAMPLES]

    def watch(self) -> None:
        """One round while the job runs: the notice (once), and the GPU sample when due."""
        if self.notice is None:
            deadline = self.notice_deadline()
            if deadline is not None and self.job_running():  # else no job to save: its end
                self.on_notice(deadline)
        if time.time() >= self.next_gpu:
            self.sample()
            if self.uri:
                error = self.write_marker(time.time() + 30, retry=False)
                if error:
                    self.say(f"GPU summary not written: {error}", once="summary")
                else:
                    request = self.checkpoint_request()
                    if request is not None:
                        self.on_request(request)
            self.next_gpu = time.time() + self.gpu_every

    def run(self) -> int:
        """Run the job to its end for good, watching; the code to exit with."""
        signal.signal(signal.SIGUSR1, lambda *_: None)  # for the job (a handler: not inherited)
        signal.signal(signal.SIGTERM, self.stop_job)
        self.next_gpu = time.time()
        while not self.ended(self.run_once()):
            pass
        return self.finish()


def main() -> None:
    # the instance log (the job's output) is where a person reads what the agent did: on
    # stderr, as the preamble's own words, the job's stdout its own; UTF-8 whatever the locale
    # (3.6 in the C locale writes ASCII only)
    if len(sys.argv) != 2:
        sys.exit("usage: python3 agent.py JOB (the job's executable)")
    with open(sys.stderr.fileno(), "w", encoding="utf-8", errors="replace", closefd=False) as log:
        logging.basicConfig(stream=log, level=logging.INFO, format="cloudbroker agent: %(message)s")
        code = Agent(sys.argv[1], dict(os.environ)).run()
    sys.exit(code)


if __name__ == "__main__":
    main()
