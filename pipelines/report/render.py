"""The report page: a Jinja2 template filled from a ``RunReport``, written as one HTML file."""

from __future__ import annotations

import datetime
import os
import re

import jinja2

from tfrecord_pipelines.components.trainer.input_stall import HOST_BOUND_SHARE, INPUT_BOUND_SHARE
from tfrecord_pipelines.report.contents import RunReport

REPORTS_DIR = "reports"


def report_path(output_dir: str, pipeline: str, run_id: str) -> str:
    """Where a run's report goes: ``<output>/reports/<pipeline>/<run id>.html``."""
    return os.path.join(
        output_dir, REPORTS_DIR, pipeline, re.sub(r"[^A-Za-z0-9._-]", "-", run_id) + ".html"
    )


def render(report: RunReport) -> str:
    """The report as one self-contained HTML page."""
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("tfrecord_pipelines.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return environment.get_template("report.html.j2").render(
        r=report,
        written=datetime.datetime.now().isoformat(sep=" ", timespec="seconds"),
        input_bound_share=INPUT_BOUND_SHARE,
        host_bound_share=HOST_BOUND_SHARE,
    )


def write_report(report: RunReport, path: str) -> str:
    """Writes the page to ``path`` (creating its folder); returns the absolute path."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    partial = f"{path}.partial"
    with open(partial, "w", encoding="utf-8") as f:
        f.write(render(report))
    os.replace(partial, path)
    return os.path.abspath(path)
