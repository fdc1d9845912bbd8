"""The dashboard's pages, rendered on the server as plain HTML (every value escaped)."""

from __future__ import annotations

import time
from decimal import Decimal
from html import escape
from typing import Any

from cloudbroker.broker.records import span
from cloudbroker.models.placements import job_end_text
from cloudbroker.web.charts import breakdown_bar, spend_chart, spend_points

#: Pages reload themselves this often (seconds): a failover shows within one refresh.
REFRESH = 5
STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222}
header{background:#123;color:#fff;padding:8px 16px}
header a{color:#fff;margin-right:16px}
main{padding:8px 16px;max-width:1200px}
table{border-collapse:collapse;width:100%;margin:8px 0}
th,td{text-align:left;padding:4px 8px;border-bottom:1px solid #ddd;vertical-align:top}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.muted{color:#666}.warn{color:#a40}
.chart{width:100%;max-width:600px;height:auto;border:1px solid #eee}
.bar{width:300px;max-width:100%;height:14px}
.legend{font-size:12px}
.scroll{overflow-x:auto}
form.action{display:inline-block;margin:4px 8px 4px 0;padding:6px;border:1px solid #ccc}
"""


def clock(at: float | None) -> str:
    return "-" if at is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))


def seconds(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.1f} s"


def layout(title: str, body: str, *, refresh: bool = True) -> str:
    meta = f'<meta http-equiv="refresh" content="{REFRESH}">' if refresh else ""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"{meta}<title>{escape(title)} · cloudbroker</title><style>{STYLE}</style></head>"
        '<body><header><a href="/">placements</a><a href="/watchers">watchers</a>'
        '<a href="/quote">quote explorer</a></header>'
        f"<main><h1>{escape(title)}</h1>{body}</main></body></html>"
    )


def _money(value: Any) -> str:
    return f"{value.amount:,.2f} {value.currency}"


def _spend(view: dict[str, Any]) -> str:
    spent = view["spend"]
    if spent is None:
        return "not priced (a plan this version cannot read)"
    said = ("≥ " if spent.lower_bound else "") + _money(spent.total)
    if spent.budget is not None:
        used = "" if spent.budget_used is None else f" ({int(spent.budget_used * 100)} %)"
        said += f" of {_money(spent.budget)}{used}"
    return said


def _instances(view: dict[str, Any]) -> str:
    rows = "".join(
        f'<tr data-instance="{escape(i.instance_id or "")}">'
        f"<td>{escape(i.role)}</td><td>{escape(i.provider)}</td>"
        f'<td>{escape(i.instance_id or "-")}</td><td class="state">{escape(i.state)}</td>'
        f"<td>{escape(i.instance_type)}</td><td>{escape(i.region)}</td></tr>"
        for i in view["instances"]
    )
    return (
        '<div class="scroll"><table class="instances"><tr><th>role</th><th>cloud</th>'
        "<th>instance</th><th>state (recorded)</th><th>type</th><th>region</th></tr>"
        f"{rows}</table></div>"
    )


def _pager(page: int, pages: int) -> str:
    """Links to the previous and next pages of the list, when there is more than one."""
    if pages <= 1:
        return ""
    page = min(page, pages)
    links = [f'<a rel="prev" href="/?page={page - 1}">previous</a>'] if page > 1 else []
    links.append(f'<span class="page">page {page} of {pages}</span>')
    if page < pages:
        links.append(f'<a rel="next" href="/?page={page + 1}">next</a>')
    return f'<p class="pager">{" ".join(links)}</p>'


def index(views: list[dict[str, Any]], pages: int = 1, *, page: int = 1) -> str:
    if not views:
        return layout("placements", '<p class="muted">no placements in this store</p>')
    rows = []
    for v in views:
        last = v["last_failover"]
        failover = "-"
        if last:
            failover = f"RTO {seconds(last.rto_seconds)}, RPO {seconds(last.rpo_seconds)}"
        lag = "-" if v["lag_seconds"] is None else span(v["lag_seconds"])
        end, exit_code = v.get("job_end"), ""
        if end is not None:  # done / failed: the job's exit code beside it
            exit_code = f' <small class="exit">exit {escape(str(end.get("exit_code")))}</small>'
        rows.append(
            f'<tr data-placement="{escape(v["id"])}">'
            f'<td><a href="/placements/{escape(v["id"])}">{escape(v["id"])}</a></td>'
            f'<td class="status">{escape(v["status"])}{exit_code}</td>'
            f'<td class="primary">{escape(v["primary"])}</td>'
            f'<td class="standby">{escape(v["standby"])}</td>'
            f"<td>{escape(v['gpu'])}</td><td>{escape(lag)}</td>"
            f'<td class="num spend">{escape(_spend(v))}</td>'
            f'<td class="failover">{escape(failover)}</td></tr>'
        )
    table = (
        '<div class="scroll"><table><tr><th>placement</th><th>status</th><th>primary</th>'
        '<th>standby</th><th>GPUs</th><th>replication lag</th><th class="num">spend</th>'
        f"<th>last failover</th></tr>{''.join(rows)}</table></div>"
    )
    return layout("placements", table + _pager(page, pages))


def placement(view: dict[str, Any], *, actions: bool, said: str = "") -> str:
    pid = view["id"]
    parts = [f'<p class="notice">{escape(said)}</p>' if said else ""]
    parts.append(
        f'<p><span class="status">{escape(view["status"])}</span>: primary '
        f'<b class="primary">{escape(view["primary"])}</b> ({escape(view["buckets"]["primary"])}),'
        f' standby <b class="standby">{escape(view["standby"])}</b> '
        f"({escape(view['buckets']['standby'])}); replication lag "
        f"{'-' if view['lag_seconds'] is None else escape(span(view['lag_seconds']))}</p>"
    )
    if end := view.get("job_end"):
        parts.append(f'<p class="job-end">{escape(job_end_text(end, clock))}</p>')
    parts.append("<h2>instances</h2>" + _instances(view))
    spent = view["spend"]
    parts.append(f'<h2>spend</h2><p class="spend">{escape(_spend(view))}</p>')
    if spent is not None:
        parts.append(_spend_chart(view))
    parts.append("<h2>failover timeline</h2>" + _timeline(view))
    if actions:
        parts.append(_actions(pid))
    parts.append("<h2>events</h2>" + _events(view["events"]))
    return layout(pid, "".join(parts))


def _spend_chart(view: dict[str, Any]) -> str:
    spent, parts = view["spend"], []
    if spent.unknown:
        parts.append(f'<p class="warn">not priced: {escape("; ".join(spent.unknown))}</p>')
    points = spend_points(view["charges"], view["created_at"], time.time())
    budget = None if spent.budget is None else spent.budget.amount
    if spent.budget is not None and spent.budget.currency != spent.total.currency:
        budget = None  # another currency: the line would mislead; the figure above converts
    parts.append(spend_chart(points, budget, spent.total.currency))
    return "".join(parts)


def _timeline(view: dict[str, Any]) -> str:
    if not view["timeline"]:
        return '<p class="muted">no failover yet</p>'
    rows = []
    for e in view["timeline"]:
        what = ""
        if e["kind"] == "roles-swapped":
            what = (
                f"{e['from']} → {e['to']} ({e['reason']}): RTO {seconds(e['rto_seconds'])}, "
                f"RPO {seconds(e.get('rpo_seconds'))}"
            )
        elif e["kind"] == "failure-detected":
            what = str(e.get("reason", ""))
        elif "rpo_seconds" in e:
            what = f"RPO {seconds(e['rpo_seconds'])}"
        rows.append(
            f'<tr class="{escape(e["kind"])}"><td>{clock(e["at"])}</td>'
            f"<td>{escape(e['kind'])}</td><td>{escape(what)}</td></tr>"
        )
    return f'<div class="scroll"><table class="timeline">{"".join(rows)}</table></div>'


def _events(events: list[dict[str, Any]]) -> str:
    rows = "".join(
        f"<tr><td>{clock(e['at'])}</td><td>{escape(e['kind'])}</td>"
        f"<td>{escape(_detail(e))}</td></tr>"
        for e in reversed(events)
    )
    return f'<div class="scroll"><table class="events">{rows}</table></div>'


def _detail(event: dict[str, Any]) -> str:
    return " ".join(
        f"{k}={v}" for k, v in event.items() if k not in ("at", "kind", "key", "standby_key")
    )


def _actions(pid: str) -> str:
    forms = []
    for action, what in (("failover", "fail over to the standby"), ("down", "terminate all")):
        forms.append(
            f'<form class="action" method="post" action="/placements/{escape(pid)}/{action}">'
            f"<b>{action}</b> ({what})<br>"
            '<label>token <input type="password" name="token" autocomplete="off"></label> '
            f'<label>type the placement id to confirm <input name="confirm"></label> '
            f'<button type="submit">{action}</button></form>'
        )
    return "<h2>actions</h2>" + "".join(forms)


def watchers(found: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><td>{escape(w['holder'])}</td><td>{escape(w['host'])}</td><td>{w['pid']}</td>"
        f"<td>{clock(w['seen_at'])}</td>"
        f"<td>{escape(', '.join(x['placement_id'] for x in w['leases']) or '-')}</td></tr>"
        for w in found["watchers"]
    )
    body = (
        '<div class="scroll"><table class="watchers"><tr><th>watcher</th><th>host</th>'
        f"<th>pid</th><th>heartbeat</th><th>leases</th></tr>{rows}</table></div>"
    )
    if found["other_holders"]:
        held = ", ".join(f"{x['placement_id']} by {x['holder']}" for x in found["other_holders"])
        body += f"<p>other lease holders: {escape(held)}</p>"
    if found["unwatched"]:
        names = ", ".join(f"{u['placement_id']} ({u['status']})" for u in found["unwatched"])
        body += f'<p class="warn">watched by no one: {escape(names)}</p>'
    return layout("watchers and leases", body)


def quote_page(form: dict[str, str], result: Any, error: str = "") -> str:
    fields = "".join(
        f'<label>{name} <input name="{name}" value="{escape(form.get(name, default))}"></label> '
        for name, default in (
            ("gpu", "A100"),
            ("count", "8"),
            ("hours", "72"),
            ("market", "on-demand"),
        )
    )
    body = f'<form method="get" action="/quote">{fields}<button type="submit">quote</button></form>'
    if error:
        body += f'<p class="warn">{escape(error)}</p>'
    if result is not None:
        rows = []
        for q in result.quotes:
            parts = [
                (line.kind, line.converted.amount) for line in q.lines if line.converted is not None
            ]
            total = q.total.amount if q.total is not None else Decimal(0)
            rows.append(
                f"<tr><td>{q.rank}</td><td>{escape(q.provider)}</td><td>{escape(q.instance_type)}</td>"
                f"<td>{escape(q.zone or q.region)}</td><td>{escape(q.market.value)}</td>"
                f'<td class="num">{"≥ " if not q.complete else ""}'
                f"{escape(_money(q.total) if q.total else 'unknown')}</td>"
                f"<td>{breakdown_bar(parts, total)}</td></tr>"
            )
        body += (
            '<div class="scroll"><table class="quotes"><tr><th>rank</th><th>cloud</th>'
            '<th>type</th><th>where</th><th>market</th><th class="num">total</th>'
            f"<th>hidden costs</th></tr>{''.join(rows)}</table></div>"
        )
    return layout("quote explorer", body, refresh=False)


def message(title: str, text: str) -> str:
    return layout(title, f"<p>{escape(text)}</p>", refresh=False)
