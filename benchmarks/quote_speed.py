"""Quote speed: our whole `cloudbroker quote` process against gpuhunt's on the same AWS rows.

Run: ./uvw run python benchmarks/quote_speed.py [--runs N] [--check] [--json] [--skip-gpuhunt]
(results go in benchmarks/README.md). Issue #20's targets: quote median <= 0.20 s and <= 1.0x
gpuhunt; quote peak RSS <= 40 MiB; engine on 100,000 offers <= 0.1 s; `--help` and
`providers` <= 0.15 s. Each line prints PASS or FAIL; the exit status is 0 unless `--check`.

Every command runs as a whole process, in turn (one round runs each once, the order rotating
from round to round), after one warm-up run each so bytecode is cached as in a user's
install. Children get a throw-away HOME and data dir and no credentials. gpuhunt (pinned,
below) is installed by ``uv`` into ``benchmarks/.venvs/gpuhunt`` (ignored by git) and fed our
AWS offline rows in its own catalog format (:mod:`gpuhunt_rows`); SkyPilot's ``sky`` is timed
only where it is already on PATH.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from importlib.metadata import version
from pathlib import Path

from engine_speed import engine_seconds
from gpuhunt_rows import aws_rows, write_catalog

from cloudbroker.testing.pytest_plugin import CREDENTIAL_PREFIXES

REPO = Path(__file__).resolve().parent.parent
VENVS = REPO / "benchmarks" / ".venvs"
GPUHUNT_PIN = "0.1.34"  # the version issue #20 measured
QUOTE = ("quote", "--gpu", "A100", "--count", "8")
#: gpuhunt's equivalent of QUOTE, AWS alone: A100 (40 and 80 GB), 8 GPUs, on-demand.
GPUHUNT_QUERY = """\
import os, gpuhunt
catalog = gpuhunt.Catalog(auto_reload="GPUHUNT_CATALOG_DIR" not in os.environ)
for i in catalog.query(provider="aws", gpu_name="A100", min_gpu_count=8, max_gpu_count=8,
                       spot=False):
    print(i.instance_name, i.location, i.price, i.gpu_count, i.gpu_name, i.gpu_memory, sep="\\t")
"""
SKY = ("sky", "show-gpus", "A100:8", "--infra", "aws")
SAME_OUTPUT = "each command printed the same in every run (the first quote: uncached)"
RSS_RUNS = 3  # extra runs of each command under GNU time, for its peak RSS
UV_TIMEOUT = 300  # seconds for one uv step (creating the venv, installing gpuhunt)


@dataclass
class Command:
    label: str
    argv: list[str]
    env: dict[str, str]
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)  # user + sys
    rss_mib: list[float] = field(default_factory=list)  # peak resident set, per measured run
    first: str | None = None  # what the first (uncached) run printed
    first_s: float | None = None  # and how long it took
    changed: bool = False  # a later run printed something else

    def run(self) -> str:
        """One whole process, timed; its output (stdout and stderr) is returned."""
        with tempfile.TemporaryFile() as out:
            started = time.perf_counter()
            child = subprocess.Popen(self.argv, env=self.env, stdout=out, stderr=out)
            _, status, usage = os.wait4(child.pid, 0)
            self.walls.append(time.perf_counter() - started)
            child.returncode = os.waitstatus_to_exitcode(status)
            self.cpus.append(usage.ru_utime + usage.ru_stime)
            out.seek(0)
            text = out.read().decode(errors="replace")
        if child.returncode:
            sys.exit(f"error: {self.label} exited with {child.returncode}:\n{text[-2000:]}")
        if self.first is None:
            self.first, self.first_s = text, self.walls[-1]
        self.changed |= text != self.first
        return text

    def measure_rss(self, time_tool: str) -> None:
        """One more run, under GNU time, for its peak RSS.

        Not our own ``wait4``: a child's ``ru_maxrss`` starts from this (large) process's
        RSS at the fork, so only a small launcher's report of its child is the child's own.
        """
        with tempfile.NamedTemporaryFile("r") as report:
            Command(
                self.label, [time_tool, "-f", "%M", "-o", report.name, *self.argv], self.env
            ).run()
            self.rss_mib.append(int(report.read().split()[-1]) / 1024)  # KiB

    def figures(self) -> dict[str, object]:
        return {
            "argv": self.argv,
            "median_s": statistics.median(self.walls),
            "min_s": min(self.walls),
            "cpu_median_s": statistics.median(self.cpus),
            "peak_rss_mib": max(self.rss_mib, default=None),
            "walls_s": self.walls,
            "first_run_s": self.first_s,
            "output_as_first_run": not self.changed,
        }


def child_env(tmp: Path) -> dict[str, str]:
    """This environment without credentials or cloudbroker settings, HOME and data in tmp."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith((*CREDENTIAL_PREFIXES, "XDG_"))  # XDG_*: cache, data, config
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    (tmp / "home").mkdir()
    env.update(
        HOME=str(tmp / "home"),
        CLOUDBROKER_DATA_DIR=str(tmp / "data"),
        AWS_EC2_METADATA_DISABLED="true",
        ALIBABA_CLOUD_ECS_METADATA_DISABLED="true",
    )
    return env


def uv(*args: str) -> subprocess.CompletedProcess[str]:
    uvw = shutil.which("uv") or str(REPO / "uvw")
    return subprocess.run(
        [uvw, *args], capture_output=True, text=True, timeout=UV_TIMEOUT, check=False
    )


def gpuhunt_python() -> tuple[Path, str]:
    """gpuhunt's own venv (created and filled on first use), and the version in it."""
    venv = VENVS / "gpuhunt"
    python = venv / "bin" / "python"
    ask = [str(python), "-c", "from gpuhunt.version import __version__; print(__version__)"]
    installed = python.exists() and subprocess.run(ask, capture_output=True, text=True).stdout
    if installed and installed.strip() == GPUHUNT_PIN:
        return python, GPUHUNT_PIN
    VENVS.mkdir(parents=True, exist_ok=True)
    (VENVS / ".gitignore").write_text("*\n")
    if not python.exists():
        done = uv("venv", "--python", sys.executable, str(venv))
        if done.returncode:
            sys.exit(f"error: uv venv {venv} failed: {done.stderr.strip()}")
    for spec in (f"gpuhunt=={GPUHUNT_PIN}", "gpuhunt"):  # the pin, else the newest
        done = uv("pip", "install", "--python", str(python), "--compile-bytecode", spec)
        if not done.returncode:
            break
        print(f"uv pip install {spec} failed: {done.stderr.strip()}", file=sys.stderr)
    else:
        sys.exit("error: could not install gpuhunt (is the package index reachable?)")
    return python, subprocess.run(ask, capture_output=True, text=True).stdout.strip()


def our_rows(exe: str, env: dict[str, str]) -> set[tuple[str, str, Decimal]]:
    """(instance type, region, hourly price) of our quote, AWS alone, every row."""
    argv = [exe, *QUOTE, "--provider", "aws", "--top", "10000", "--json"]
    answer = json.loads(Command("ours, AWS alone, JSON", argv, env).run())
    return {
        (q["instance_type"], q["region"], Decimal(q["hourly"]["amount"])) for q in answer["quotes"]
    }


def gpuhunt_rows_of(output: str) -> set[tuple[str, str, Decimal]]:
    lines = (line.split("\t") for line in output.splitlines() if line.strip())
    return {(name, region, Decimal(price)) for name, region, price, *_ in lines}


def gpuhunt_commands(tmp: Path, env: dict[str, str], report: dict) -> dict[str, Command]:
    """gpuhunt's query on our AWS rows, read from its zip catalog and from its CSV dir."""
    python, gpuhunt = gpuhunt_python()
    report["versions"]["gpuhunt"] = gpuhunt
    known = "from gpuhunt._internal.catalog import OFFLINE_PROVIDERS as p; print(*p)"
    providers = subprocess.run(
        [str(python), "-c", known], capture_output=True, text=True, check=True
    ).stdout.split()
    os.environ["CLOUDBROKER_DATA_DIR"] = env["CLOUDBROKER_DATA_DIR"]  # the catalog ours reads
    rows = aws_rows()
    report["gpuhunt_catalog"] = {"rows": len(rows.rows), "left_out": rows.left_out}
    root = tmp / "gpuhunt"
    root.mkdir()
    write_catalog(rows.rows, root, tuple(providers))
    query = [str(python), "-c", GPUHUNT_QUERY]
    zipped = {**env, "GPUHUNT_CATALOG_URL": root.as_uri()}
    plain = {**env, "GPUHUNT_CATALOG_DIR": str(root)}
    return {
        "gpuhunt_zip": Command(f"gpuhunt {gpuhunt}, zip catalog", query, zipped),
        "gpuhunt_csv": Command(f"gpuhunt {gpuhunt}, CATALOG_DIR csv", query, plain),
    }


def compare_rows(exe: str, env: dict[str, str], commands: dict[str, Command]) -> dict:
    """Whether our quote (AWS alone) and both gpuhunt variants return the same rows."""
    ours = our_rows(exe, env)
    zipped, plain = (gpuhunt_rows_of(commands[k].run()) for k in ("gpuhunt_zip", "gpuhunt_csv"))
    return {
        "ours": len(ours),
        "gpuhunt": len(zipped),
        "same": ours == zipped == plain,
        "only_ours": sorted(map(str, ours - zipped)),
        "only_gpuhunt": sorted(map(str, (zipped | plain) - ours)),
    }


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="runs of each command (15)")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target fails")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--skip-gpuhunt", action="store_true", help="do not install or run it")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    exe = str(Path(sys.executable).parent / "cloudbroker")
    report: dict[str, object] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"nproc": os.cpu_count(), "cpu": cpu_model(), "load_before": load()},
        "versions": {"python": platform.python_version(), "cloudbroker": version("cloudbroker")},
        "runs": args.runs,
    }
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        env = child_env(tmp)
        aws = [*QUOTE, "--provider", "aws"]
        commands = {
            "quote": Command(f"ours: cloudbroker {' '.join(QUOTE)}", [exe, *QUOTE], env),
            "quote_aws": Command("ours, AWS alone: ... --provider aws", [exe, *aws], env),
        }
        if not args.skip_gpuhunt:
            commands |= gpuhunt_commands(tmp, env, report)
        commands["help"] = Command("cloudbroker --help", [exe, "--help"], env)
        commands["providers"] = Command("cloudbroker providers", [exe, "providers"], env)
        if sky := shutil.which("sky"):
            commands["sky"] = Command("SkyPilot " + " ".join(SKY), [sky, *SKY[1:]], env)
        else:
            report["skypilot"] = "not installed, skipped"
        for command in commands.values():  # warm-up: bytecode, the user's data dir
            command.run()
        if not args.skip_gpuhunt:  # warm, as the timed runs: the same path of ours
            report["rows"] = compare_rows(exe, env, commands)
        for command in commands.values():
            command.walls, command.cpus = [], []
        names = list(commands)
        for i in range(args.runs):
            for name in names[i % len(names) :] + names[: i % len(names)]:
                commands[name].run()
        if time_tool := shutil.which("time"):  # GNU time, for peak RSS
            for _ in range(min(RSS_RUNS, args.runs)):
                for command in commands.values():
                    command.measure_rss(time_tool)
        else:
            report["peak_rss"] = "unknown: GNU time (/usr/bin/time) is not installed"
    report["commands"] = {name: c.figures() for name, c in commands.items()}
    report["engine_s"] = engine_seconds(repeats=min(5, args.runs))
    report["machine"]["load_after"] = load()  # type: ignore[index]
    report["targets"] = targets(report)
    if args.json:
        print(json.dumps(report, indent=2, default=str))
    else:
        show(report, commands)
    failed = any(t["pass"] is False for t in report["targets"])  # type: ignore[union-attr]
    return 1 if args.check and failed else 0


def targets(report: dict) -> list[dict[str, object]]:
    """Issue #20's targets, each with its measured value; pass None = not measured."""
    c = report["commands"]
    quote = c["quote"]["median_s"]
    gpuhunt = [c[k]["median_s"] for k in ("gpuhunt_zip", "gpuhunt_csv") if k in c]
    ratio = quote / min(gpuhunt) if gpuhunt else None
    found = [
        ("quote median (s)", quote, 0.20),
        ("quote / gpuhunt (faster variant)", ratio, 1.0),
        ("quote peak RSS (MiB)", c["quote"]["peak_rss_mib"], 40.0),
        ("engine, 100,000 offers (s)", report["engine_s"], 0.1),
        ("--help median (s)", c["help"]["median_s"], 0.15),
        ("providers median (s)", c["providers"]["median_s"], 0.15),
    ]
    out: list[dict[str, object]] = [
        {"name": n, "value": v, "limit": lim, "pass": None if v is None else v <= lim}
        for n, v, lim in found
    ]
    steady = all(x["output_as_first_run"] for x in c.values())
    checks = [(SAME_OUTPUT, steady)]
    if "rows" in report:
        checks.append(("same rows as gpuhunt", report["rows"]["same"]))
    out += [{"name": n, "value": ok, "limit": True, "pass": ok} for n, ok in checks]
    return out


def show(report: dict, commands: dict[str, Command]) -> None:
    m, v = report["machine"], report["versions"]
    print(
        f"{report['date']}  {m['nproc']} CPUs ({m['cpu']}); load {m['load_before']} before, "
        f"{m['load_after']} after"
    )
    print("versions: " + ", ".join(f"{k} {x}" for k, x in v.items()))
    if rows := report.get("rows"):
        same = "yes" if rows["same"] else "NO"
        print(
            f"rows, AWS on-demand 8x A100: ours {rows['ours']}, gpuhunt {rows['gpuhunt']}, "
            f"same instance types/regions/prices: {same}"
        )
        catalog = report["gpuhunt_catalog"]
        print(
            f"gpuhunt's catalog: {catalog['rows']} rows from our AWS catalog "
            f"(per-zone rows left out: {catalog['left_out']})"
        )
        for side in ("only_ours", "only_gpuhunt"):
            for row in rows[side]:
                print(f"  {side}: {row}")
    print(f"\n{report['runs']} alternating runs each, after a first (warm-up) run; whole process")
    print(f"{'command':<48} {'median':>8} {'min':>8} {'cpu':>8} {'peak RSS':>10} {'1st run':>8}")
    for c in commands.values():
        f = c.figures()
        rss = "unknown" if f["peak_rss_mib"] is None else f"{f['peak_rss_mib']:.1f} MiB"
        print(
            f"{c.label:<48} {f['median_s']:>7.3f}s {f['min_s']:>7.3f}s "
            f"{f['cpu_median_s']:>7.3f}s {rss:>10} {f['first_run_s']:>7.3f}s"
        )
    if "skypilot" in report:
        print(f"SkyPilot {' '.join(SKY)}: {report['skypilot']}")
    ours = commands["quote"].figures()
    for key in ("gpuhunt_zip", "gpuhunt_csv", "sky"):
        if key in commands:
            theirs = commands[key].figures()
            wall = ours["median_s"] / theirs["median_s"]
            cpu = ours["cpu_median_s"] / theirs["cpu_median_s"]
            print(f"ours / {commands[key].label}: {wall:.2f}x (CPU time: {cpu:.2f}x)")
    print(
        f"engine, 100,000 offers, median of {min(5, report['runs'])}: {report['engine_s']:.3f} s\n"
    )
    for t in report["targets"]:
        verdict = {True: "PASS", False: "FAIL", None: "SKIP"}[t["pass"]]
        if isinstance(t["value"], bool):
            print(f"{verdict}  {t['name']}: {'yes' if t['value'] else 'no'}")
        else:
            value = "not measured" if t["value"] is None else f"{t['value']:.3f}"
            print(f"{verdict}  {t['name']}: {value} (target <= {t['limit']})")


if __name__ == "__main__":
    sys.exit(main())
