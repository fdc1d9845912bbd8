"""Inline SVG charts (no script, no Node build): spend against budget, a cost breakdown."""

from __future__ import annotations

from decimal import Decimal
from html import escape

from cloudbroker.broker.budget import Charges

WIDTH, HEIGHT, PAD = 600, 180, 30
#: One colour per quote line kind (colour-blind safe: Okabe-Ito).
COLOURS = {
    "compute": "#0072B2",
    "minimum-uplift": "#E69F00",
    "egress": "#D55E00",
    "storage": "#009E73",
    "snapshot": "#CC79A7",
}


def spend_points(lines: Charges, start: float, now: float) -> list[tuple[float, Decimal]]:
    """Cumulative spend over time from the guard's own charges: each run's compute accrues
    evenly over its run, its uplift at its start, each copy's egress at once. The last point
    is the guard's total."""
    times = sorted({start, now, *(r.start for r in lines.runs), *(r.end for r in lines.runs)})
    times = [t for t in times if start <= t <= now]
    egress = sum((m.amount for m in lines.egress.values()), Decimal(0))
    points = []
    for t in times:
        total = Decimal(0)
        for run in lines.runs:
            if t < run.start:
                continue
            length = run.end - run.start
            done = length <= 0 or t >= run.end
            share = Decimal(1) if done else Decimal(repr((t - run.start) / length))
            total += run.compute.amount * share + run.uplift.amount
        points.append((t, total))
    if points:  # egress: counted by the guard as recorded; shown at the end (its times vary)
        points[-1] = (points[-1][0], points[-1][1] + egress)
    return points


def spend_chart(points: list[tuple[float, Decimal]], budget: Decimal | None, currency: str) -> str:
    """A line of spend over time, the budget as a dashed line (when there is one)."""
    if len(points) < 2:
        return '<p class="muted">not enough history for a chart yet</p>'
    t0, t1 = points[0][0], points[-1][0]
    top = max([p[1] for p in points] + ([budget] if budget else [])) or Decimal(1)

    def xy(t: float, v: Decimal) -> str:
        x = PAD + (WIDTH - 2 * PAD) * ((t - t0) / ((t1 - t0) or 1))
        y = HEIGHT - PAD - (HEIGHT - 2 * PAD) * float(v / top)
        return f"{x:.1f},{y:.1f}"

    line = " ".join(xy(t, v) for t, v in points)
    parts = [
        f'<svg role="img" aria-label="spend against budget" viewBox="0 0 {WIDTH} {HEIGHT}" '
        'class="chart" xmlns="http://www.w3.org/2000/svg">',
        f'<polyline fill="none" stroke="#0072B2" stroke-width="2" points="{line}"/>',
        f'<text x="{PAD}" y="{PAD - 8}" font-size="12">'
        f"spend {points[-1][1]:.2f} {escape(currency)}</text>",
    ]
    if budget:
        y = xy(t0, budget).split(",")[1]
        parts.append(
            f'<line x1="{PAD}" x2="{WIDTH - PAD}" y1="{y}" y2="{y}" stroke="#D55E00" '
            'stroke-dasharray="6 4"/>'
        )
        parts.append(
            f'<text x="{WIDTH - PAD}" y="{float(y) - 4:.1f}" font-size="12" text-anchor="end">'
            f"budget {budget:.2f} {escape(currency)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def breakdown_bar(parts: list[tuple[str, Decimal]], total: Decimal) -> str:
    """One stacked bar: each known cost line's share of the total, labelled in a legend."""
    if total <= 0:
        return ""
    x, rects, legend = 0.0, [], []
    for kind, amount in parts:
        width = 300 * float(amount / total)
        colour = COLOURS.get(kind, "#999999")
        rects.append(
            f'<rect x="{x:.1f}" y="0" width="{width:.1f}" height="14" fill="{colour}">'
            f"<title>{escape(kind)} {amount:.2f}</title></rect>"
        )
        legend.append(f'<span style="color:{colour}">■</span> {escape(kind)} {amount:.2f}')
        x += width
    svg = (
        '<svg role="img" aria-label="cost breakdown" viewBox="0 0 300 14" class="bar" '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(rects)}</svg>'
    )
    return f'{svg}<div class="legend">{" · ".join(legend)}</div>'
