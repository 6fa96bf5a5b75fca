"""Usage totals (issue 34): tokens, model calls, tool calls, job time and cost, by role,
by user (the session's owner) or by day, for the sessions a user sees.

Read with a few grouped queries whatever the volume: the jobs' sums per group and
endpoint (the cost needs each endpoint's price), and the tool calls per group.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db.models import Count, DurationField, ExpressionWrapper, F, Q, QuerySet, Sum
from django.db.models.functions import TruncDate

from roles.models import EndpointKind, ModelEndpoint
from sessions_app.models import AgentSession, Job, JobEvent, JobEventKind

USAGE_GROUPS = ("role", "user", "day")
_GROUP_FIELDS = {"role": "role__slug", "user": "session__owner__username", "day": "day"}
MILLION = Decimal(1_000_000)


@dataclass
class UsageTotals:
    """One group's totals (or all of them); ``cost`` is None when no call in it was priced."""

    key: str
    tokens_in: int = 0
    tokens_out: int = 0
    llm_calls: int = 0
    tool_calls: int = 0
    jobs: int = 0
    seconds: float = 0.0
    cost: Decimal | None = None
    unpriced_tokens: int = 0  # tokens of calls to endpoints without a price

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out

    def add(self, other: UsageTotals) -> None:
        self.tokens_in += other.tokens_in
        self.tokens_out += other.tokens_out
        self.llm_calls += other.llm_calls
        self.tool_calls += other.tool_calls
        self.jobs += other.jobs
        self.seconds += other.seconds
        self.unpriced_tokens += other.unpriced_tokens
        if other.cost is not None:
            self.cost = (self.cost or Decimal(0)) + other.cost

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["tokens"] = self.tokens
        data["seconds"] = round(self.seconds, 3)
        data["cost"] = None if self.cost is None else str(self.cost.quantize(Decimal("0.0001")))
        return data


def endpoint_prices() -> dict[tuple[str, str], tuple[Decimal, Decimal]]:
    """(what a job records as its endpoint, its model) → prices per million tokens (in,
    out), for every endpoint with a price; the model is "" for a match on the endpoint alone."""
    prices: dict[tuple[str, str], tuple[Decimal, Decimal]] = {}
    rows = ModelEndpoint.objects.filter(
        Q(input_price__isnull=False) | Q(output_price__isnull=False)
    )
    for row in rows:
        price = (row.input_price or Decimal(0), row.output_price or Decimal(0))
        if row.kind == EndpointKind.SCRIPTED:
            where = f"scripted:{row.name}"
        else:
            where = row.base_url or settings.ACODE_LLM_BASE_URL
        prices[(where, row.model or ("scripted" if row.kind == EndpointKind.SCRIPTED else ""))] = (
            price
        )
        prices.setdefault((where, ""), price)
    return prices


def _jobs(sessions: QuerySet[AgentSession] | None, since: datetime | None) -> QuerySet[Job]:
    jobs = Job.objects.all()
    if sessions is not None:
        jobs = jobs.filter(session__in=sessions)
    if since is not None:
        jobs = jobs.filter(created_at__gte=since)
    return jobs.annotate(day=TruncDate("created_at"))


def usage_totals(
    sessions: QuerySet[AgentSession] | None = None, *, by: str, since: datetime | None = None
) -> dict[str, Any]:
    """Totals of the jobs of ``sessions`` (all by default), created since ``since``, per
    ``by`` (role, user or day), with a row for everything; days in order, else the most
    tokens first."""
    if by not in USAGE_GROUPS:
        raise ValueError(f"usage is grouped by one of {', '.join(USAGE_GROUPS)}, not {by!r}")
    field = _GROUP_FIELDS[by]
    jobs = _jobs(sessions, since)
    took = ExpressionWrapper(F("finished_at") - F("started_at"), output_field=DurationField())
    sums = (
        jobs.order_by()
        .values(field, "endpoint", "model")
        .annotate(
            tokens_in=Sum("tokens_in"),
            tokens_out=Sum("tokens_out"),
            llm_calls=Sum("llm_calls"),
            jobs=Count("pk"),
            took=Sum(took, filter=Q(started_at__isnull=False, finished_at__isnull=False)),
        )
    )
    prices = endpoint_prices()
    groups: dict[str, UsageTotals] = {}
    for row in sums:
        key = str(row[field] or "")
        found = UsageTotals(
            key,
            tokens_in=row["tokens_in"] or 0,
            tokens_out=row["tokens_out"] or 0,
            llm_calls=row["llm_calls"] or 0,
            jobs=row["jobs"],
            seconds=row["took"].total_seconds() if row["took"] else 0.0,
        )
        price = prices.get((row["endpoint"], row["model"])) or prices.get((row["endpoint"], ""))
        if price is not None:
            found.cost = (found.tokens_in * price[0] + found.tokens_out * price[1]) / MILLION
        else:
            found.unpriced_tokens = found.tokens
        groups.setdefault(key, UsageTotals(key)).add(found)
    tool_calls = (
        JobEvent.objects.filter(job__in=jobs.values("pk"), kind=JobEventKind.TOOL_CALL)
        .order_by()
        .values(f"job__{field}" if by != "day" else "job__created_at__date")
        .annotate(n=Count("pk"))
        .values_list(f"job__{field}" if by != "day" else "job__created_at__date", "n")
    )
    for key, n in tool_calls:
        groups.setdefault(str(key or ""), UsageTotals(str(key or ""))).tool_calls += n
    if by == "day":
        rows = sorted(groups.values(), key=lambda g: g.key)
    else:
        rows = sorted(groups.values(), key=lambda g: -g.tokens)
    total = UsageTotals("total")
    for group in rows:
        total.add(group)
    return {"by": by, "rows": [g.as_dict() for g in rows], "total": total.as_dict()}
