"""The usage page: how the time of the sessions a user sees splits across roles, drawn as
a server-rendered SVG bar chart against the spec's target ranges; and the totals of tokens,
model calls, tool calls, job time and cost by role, user and day (issue 34), as tables and
as Chartist bar charts drawn in the browser from the same numbers (``static/usage.js``);
and the quality of runs by role, model and template (issue 39), as tables with
server-rendered SVG bars."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, cast

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from sessions_app.dashboard.formatting import RoleBadge, duration_text, role_badge
from sessions_app.permissions import can_view_all, sessions_visible_to
from sessions_app.selectors import time_in_role
from sessions_app.selectors.quality import QUALITY_GROUPS, quality_metrics
from sessions_app.selectors.totals import usage_totals

# The day chart covers this many days back; the role and user ones all time.
USAGE_DAYS_CHARTED = 30
# Chart geometry, in SVG units.
USAGE_ROW_HEIGHT = 44
USAGE_PLOT_WIDTH = 500


@dataclass(frozen=True)
class UsageBar:
    """One row of the usage chart, with its geometry in SVG units."""

    role: RoleBadge
    y: int
    share: float
    percent: str
    duration: str
    target: tuple[float, float] | None
    target_text: str
    verdict: str  # within, below, above, none
    bar_width: float
    band_x: float
    band_width: float


@dataclass(frozen=True)
class UsageTick:
    label: str
    x: float


def verdict(share: float, target: tuple[float, float] | None) -> str:
    """Where a share stands against its target range: within, below, above, or none."""
    if target is None:
        return "none"
    if share < target[0]:
        return "below"
    if share > target[1]:
        return "above"
    return "within"


def usage_bar(index: int, slug: str, share: float, seconds: float) -> UsageBar:
    scale = USAGE_PLOT_WIDTH
    target = time_in_role.TARGET_SHARES.get(slug)
    return UsageBar(
        role=role_badge(slug),
        y=index * USAGE_ROW_HEIGHT,
        share=share,
        percent=f"{share * 100:.1f}%",
        duration=duration_text(seconds),
        target=target,
        target_text=f"{target[0] * 100:.0f}\u2013{target[1] * 100:.0f}%" if target else "",
        verdict=verdict(share, target),
        bar_width=round(share * scale, 2),
        band_x=round(target[0] * scale, 2) if target else 0.0,
        band_width=round((target[1] - target[0]) * scale, 2) if target else 0.0,
    )


def usage_chart(user: User) -> dict[str, Any]:
    """The time-in-role distribution of the sessions the user sees, laid out as a bar chart."""
    data = time_in_role.usage(sessions_visible_to(user))
    shares = {row["role"]: row for row in data["roles"]}
    # Every role with time spent, plus the ones the spec sets a target for (even at 0 %).
    slugs = [row["role"] for row in data["roles"]]
    slugs += [slug for slug in time_in_role.TARGET_SHARES if slug not in shares]
    bars = []
    for i, slug in enumerate(slugs):
        row = shares.get(slug, {"share": 0.0, "seconds": 0.0})
        bars.append(usage_bar(i, slug, float(row["share"]), float(row["seconds"])))
    height = max(1, len(bars)) * USAGE_ROW_HEIGHT
    return {
        "bars": bars,
        "total": duration_text(float(data["total_seconds"])),
        "total_seconds": data["total_seconds"],
        "waiting": duration_text(float(data["waiting_seconds"])),
        "waiting_seconds": data["waiting_seconds"],
        "height": height,
        "plot_width": USAGE_PLOT_WIDTH,
        "value_x": USAGE_PLOT_WIDTH + 12,
        "tick_y": height + 18,
        "svg_height": height + 36,
        "ticks": [UsageTick(f"{p}%", p * USAGE_PLOT_WIDTH / 100) for p in (0, 25, 50, 75, 100)],
    }


def _label(by: str, key: str) -> str:
    if by == "role":
        return role_badge(key).name
    return key or "—"


def usage_tables(user: User) -> dict[str, Any]:
    """The totals by role, user and day (the last ``USAGE_DAYS_CHARTED`` days), each as
    table rows and as the series its chart draws."""
    visible = sessions_visible_to(user)
    since = timezone.now() - timedelta(days=USAGE_DAYS_CHARTED)
    tables: dict[str, Any] = {}
    for by in ("role", "user", "day"):
        data = usage_totals(visible, by=by, since=since if by == "day" else None)
        rows = [{**row, "label": _label(by, row["key"]), "time": duration_text(row["seconds"])}
                for row in data["rows"]]  # fmt: skip
        tables[by] = {
            "rows": rows,
            "total": {**data["total"], "time": duration_text(data["total"]["seconds"])},
            "chart": {
                "labels": [row["label"] for row in rows],
                "tokens_in": [row["tokens_in"] for row in rows],
                "tokens_out": [row["tokens_out"] for row in rows],
                "llm_calls": [row["llm_calls"] for row in rows],
                "tool_calls": [row["tool_calls"] for row in rows],
                "minutes": [round(row["seconds"] / 60, 2) for row in rows],
            },
        }
    tables["priced"] = any(t["total"]["cost"] is not None for t in tables.values())
    tables["days"] = USAGE_DAYS_CHARTED
    return tables


QUALITY_METRICS = ("first_time_pass", "approved_without_revisions", "scope_creep")


def _ratio_cell(ratio: dict[str, Any]) -> dict[str, Any]:
    """A metric as the page shows it: "2 of 3", its percentage and its bar's width (of 100)."""
    rate = ratio["rate"]
    return {
        **ratio,
        "text": f"{ratio['count']} of {ratio['of']}",
        "percent": "—" if rate is None else f"{rate * 100:.1f}%",
        "width": 0 if rate is None else round(rate * 100, 1),
    }


def _quality_row(row: dict[str, Any]) -> dict[str, Any]:
    return {**row, "cells": [_ratio_cell(row[name]) for name in QUALITY_METRICS]}


def usage_quality(user: User) -> dict[str, Any]:
    """The quality metrics of the runs the user sees, by role, model and template, each
    row with its three metrics as cells (text and bar width)."""
    visible = sessions_visible_to(user)
    tables: dict[str, Any] = {}
    for by in QUALITY_GROUPS:
        data = quality_metrics(visible, by=by)
        tables[by] = {
            "rows": [_quality_row(row) for row in data["rows"]],
            "total": _quality_row(data["total"]),
        }
        tables["runs"] = data["runs"]
    return tables


@login_required
@require_GET
def usage(request: HttpRequest) -> HttpResponse:
    """Time-in-role distribution as a server-rendered SVG, against the spec's targets, and
    the usage totals with their charts."""
    user = cast(User, request.user)
    totals = usage_tables(user)
    charts = {by: totals[by]["chart"] for by in ("role", "user", "day")}
    return render(
        request,
        "dashboard/usage.html",
        {
            "nav": "usage",
            "chart": usage_chart(user),
            "view_all": can_view_all(user),
            "totals": totals,
            "charts": charts,
            "quality": usage_quality(user),
        },
    )
