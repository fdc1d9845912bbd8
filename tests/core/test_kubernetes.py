"""deploy/kubernetes: the kustomize base, validated against the Kubernetes schemas (offline)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from cloudbroker.cli.broker.common import FINAL_SYNC_TIMEOUT

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "deploy" / "kubernetes"
#: The oldest Kubernetes the manifests are checked against (policy/v1 PDBs: 1.21+).
VERSION = "1.30.0"
OPERATOR = "monitoring.coreos.com/v1"  # the Prometheus Operator's kinds: no bundled schema
COLLECTOR = ROOT / "core" / "src" / "cloudbroker" / "metrics" / "collector.py"


def kustomization() -> dict:
    return yaml.safe_load((BASE / "kustomization.yaml").read_text())


def manifests() -> dict[str, dict]:
    """Each resource of the base by kind."""
    found = {}
    for name in kustomization()["resources"]:
        for doc in yaml.safe_load_all((BASE / name).read_text()):
            found[doc["kind"]] = doc
    return found


def test_the_base_lists_every_manifest_beside_it():
    listed = set(kustomization()["resources"])
    present = {p.name for p in BASE.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == present
    assert kustomization()["configMapGenerator"][0]["files"] == ["grafana-dashboard.json"]


@pytest.mark.parametrize("kind", ["Deployment", "PodDisruptionBudget", "Service"])
def test_each_core_manifest_is_valid_against_the_kubernetes_schema(kind):
    doc = manifests()[kind]
    assert kubernetes_validate.validate(doc, VERSION, strict=True) is not None


def test_the_validator_would_catch_a_mistake():
    doc = manifests()["Deployment"]
    doc["spec"]["template"]["spec"]["containers"][0]["livenessProbes"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(doc, VERSION, strict=True)


def test_two_or_three_watchers_on_different_nodes_that_outlive_a_failover_step():
    deployment = manifests()["Deployment"]
    spec, pod = deployment["spec"], deployment["spec"]["template"]["spec"]
    assert 2 <= spec["replicas"] <= 3
    [term] = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert term["labelSelector"]["matchLabels"].items() <= labels.items()
    final_sync = float(FINAL_SYNC_TIMEOUT.default.rstrip("s"))
    assert pod["terminationGracePeriodSeconds"] > final_sync
    [container] = pod["containers"]
    assert container["envFrom"] == [{"secretRef": {"name": "cloudbroker-watch"}}]
    args = container["args"]
    port = int(args[args.index("--metrics-port") + 1])
    assert args[args.index("--metrics-address") + 1] == "0.0.0.0"
    [declared] = container["ports"]
    assert declared["containerPort"] == port
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert container[probe]["httpGet"] == {"path": "/metrics", "port": declared["name"]}
    assert pod["securityContext"]["runAsNonRoot"] is True
    pdb = manifests()["PodDisruptionBudget"]
    assert 1 <= pdb["spec"]["minAvailable"] < spec["replicas"]
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()


def exported_metrics() -> set[str]:
    """The metric names the watcher exports (counters also as ``_total``)."""
    names = set(re.findall(r'"(cloudbroker_[a-z_]+)"', COLLECTOR.read_text()))
    return names | {f"{n}_total" for n in names}


def used_metrics(expr: str) -> set[str]:
    return set(re.findall(r"cloudbroker_[a-z_]+", expr))


def test_the_service_monitor_and_alert_rules_use_the_watchers_port_and_metrics():
    monitor, rules = manifests()["ServiceMonitor"], manifests()["PrometheusRule"]
    assert monitor["apiVersion"] == rules["apiVersion"] == OPERATOR
    service = manifests()["Service"]
    assert monitor["spec"]["endpoints"][0]["port"] in {p["name"] for p in service["spec"]["ports"]}
    alerts = [r for g in rules["spec"]["groups"] for r in g["rules"]]
    assert {"CloudbrokerNoWatcher", "CloudbrokerFailover", "CloudbrokerStateUnreadable"} <= {
        a["alert"] for a in alerts
    }
    for alert in alerts:
        assert used_metrics(alert["expr"]) and used_metrics(alert["expr"]) <= exported_metrics()
        assert alert["labels"]["severity"] in ("warning", "critical")


def test_the_grafana_dashboard_charts_only_metrics_the_watcher_exports():
    dashboard = json.loads((BASE / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    charted = set().union(*(used_metrics(e) for e in exprs))
    assert charted <= exported_metrics()
    for needed in ("cloudbroker_last_rto_seconds", "cloudbroker_replication_lag_seconds"):
        assert needed in charted
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
