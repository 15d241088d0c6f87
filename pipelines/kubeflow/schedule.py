"""A compiled pipeline on a schedule: KFP's cron, and the span each scheduled run converts.

KFP's API server parses a recurring run's cron with robfig/cron v1
(``backend/src/apiserver/server/api_converter.go``): six fields, seconds
first (``0 0 2 * * *`` is 02:00 every day), the day of the week optional, or
a descriptor (``@daily``, ``@every 6h``). A standard five-field cron parses
too, as seconds to months: ``0 2 * * *`` runs at minute 2 of every hour. It
is refused here, with the six-field form to use.

As TFX's periodic-training RFC recommends, a scheduled run's span comes from
its scheduled time: KFP's scheduler fills ``[[ScheduledTime.<Go layout>]]`` in
a recurring run's parameters, so data named by date specs gets the day that
ended before the scheduled time (``<day>-1d``: its folder is complete by
then). Data named by ``{SPAN}`` numbers, which no clock gives, gets the latest
span on disk.
"""

from __future__ import annotations

import re

import yaml

from tfrecord_pipelines.components.spans import LATEST as LATEST_SPAN

# The run-time parameter naming the span a run converts (a number, a day, or latest).
SPAN_PARAMETER = "span"
# KFP's macro for a run's scheduled day (a Go time layout: 2006-01-02 is YYYY-MM-DD).
SCHEDULED_DAY = "[[ScheduledTime.2006-01-02]]"
_DATE_SPEC = "{YYYY}"
_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_EVERY = re.compile(r"^@every\s+(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$")


def check_cron(expression: str) -> str:
    """Returns a KFP cron expression, stripped, or raises ValueError saying how to write it."""
    text = " ".join(expression.split())
    if text.startswith("@"):
        if text in _DESCRIPTORS or _EVERY.match(text):
            return text
        raise ValueError(
            f"Schedule {expression!r}: KFP knows {', '.join(_DESCRIPTORS)} and '@every "
            "DURATION' (e.g. @every 6h)."
        )
    fields = text.split(" ")
    if len(fields) == 5:
        raise ValueError(
            f"Schedule {expression!r} has 5 fields; KFP's cron has 6, seconds first, and would "
            f"read this one as seconds to months: write '0 {text}' for the standard cron's "
            "meaning."
        )
    if len(fields) != 6:
        raise ValueError(
            f"Schedule {expression!r} has {len(fields)} fields; KFP's cron has 6: second "
            "minute hour day-of-month month day-of-week, e.g. '0 30 1 * * *' for 01:30 daily."
        )
    return text


def scheduled_parameters(package_path: str) -> dict[str, str]:
    """The parameters each scheduled run of a compiled pipeline gets: for data in spans,
    the span (the day before the scheduled day under date specs, else the latest)."""
    with open(package_path) as f:
        spec = next(yaml.safe_load_all(f))
    parameters = spec.get("root", {}).get("inputDefinitions", {}).get("parameters", {})
    if SPAN_PARAMETER not in parameters:
        return {}
    dated = _DATE_SPEC in yaml.safe_dump(spec.get("root", {}).get("dag", {}))
    return {SPAN_PARAMETER: f"{SCHEDULED_DAY}-1d" if dated else LATEST_SPAN}
