"""Runs the pipeline on this machine: LocalDagRunner, SQLite ML Metadata, Beam DirectRunner."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import os
from collections.abc import Callable, Sequence

from tfx.dsl.compiler import constants as compiler_constants
from tfx.orchestration import metadata
from tfx.orchestration.local.local_dag_runner import LocalDagRunner
from tfx.orchestration.portable import runtime_parameter_utils

from tfrecord_pipelines.components.daily.window import WindowPlan, converted_spans, plan_window
from tfrecord_pipelines.components.keys import EXAMPLE_GEN_ID, PUSHER_ID
from tfrecord_pipelines.definition.config import PipelineConfig
from tfrecord_pipelines.definition.pipeline import create_backfill_pipeline, create_pipeline
from tfrecord_pipelines.local.beam_args import local_beam_args
from tfrecord_pipelines.local.component_costs import metered_executors, record_costs
from tfrecord_pipelines.local.interrupted_runs import (
    InterruptedExecution,
    cancel_interrupted_executions,
)
from tfrecord_pipelines.local.layout import LocalLayout
from tfrecord_pipelines.local.run_record import open_store, read_run
from tfrecord_pipelines.local.staged_models import settle_staged_models


@dataclasses.dataclass(frozen=True)
class Recovery:
    """What a run found left by an earlier run that did not finish, and put right.

    Attributes:
      interrupted: executions left unfinished, now CANCELED, their folders removed.
      published: staged models whose push was recorded, moved into the serving folder.
      discarded: staged models whose push was never recorded, deleted.
    """

    interrupted: tuple[InterruptedExecution, ...] = ()
    published: tuple[str, ...] = ()
    discarded: tuple[str, ...] = ()


class _RunnerWithRunId(LocalDagRunner):
    """LocalDagRunner with a run id chosen by the caller, to read the run back by."""

    def __init__(self, run_id: str):
        super().__init__()
        self._run_id = run_id

    def run_with_ir(self, pipeline, run_options=None):  # noqa: D102 - LocalDagRunner's
        # Once substituted, LocalDagRunner's own substitution finds nothing to replace.
        runtime_parameter_utils.substitute_runtime_parameter(
            pipeline, {compiler_constants.PIPELINE_RUN_ID_PARAMETER_NAME: self._run_id}
        )
        return super().run_with_ir(pipeline, run_options)


def new_run_id() -> str:
    """A pipeline run id: the local time to the millisecond, as LocalDagRunner names runs."""
    return datetime.datetime.now().isoformat(timespec="milliseconds")


def recover(layout: LocalLayout, pipeline_name: str) -> Recovery:
    """Puts right what an interrupted run left. Call under the output lock only."""
    if not os.path.exists(layout.metadata_path):
        return Recovery()
    store = open_store(layout.metadata_path)
    interrupted = cancel_interrupted_executions(store, pipeline_name, layout.pipeline_root)
    published, discarded = settle_staged_models(store, pipeline_name, PUSHER_ID, layout.serving_dir)
    return Recovery(tuple(interrupted), tuple(published), tuple(discarded))


def _backfill(
    config: PipelineConfig,
    layout: LocalLayout,
    beam_args: list[str],
    on_window: Callable[[WindowPlan], None] | None,
) -> WindowPlan:
    """Converts the window's spans that no run converted yet, one ExampleGen run per span."""
    pattern = config.source.spans
    end = config.span
    converted = converted_spans(open_store(layout.metadata_path), config.name, EXAMPLE_GEN_ID)
    plan = plan_window(pattern, config.window, end, converted)
    if on_window:
        on_window(plan)
    connection = metadata.sqlite_metadata_connection_config(layout.metadata_path)
    for folder in plan.to_convert:
        backfill = create_backfill_pipeline(
            config,
            layout.pipeline_root,
            folder.span,
            metadata_connection_config=connection,
            beam_pipeline_args=beam_args,
        )
        _RunnerWithRunId(f"{new_run_id()}-span-{folder.span}").run(backfill)
    return plan


def _raise_failed_nodes(layout: LocalLayout, pipeline_name: str, run_id: str) -> None:
    """Raises naming the nodes that failed. LocalDagRunner records a Resolver that failed
    and goes on: its consumers then run without the artifacts it should have resolved."""
    run = read_run(open_store(layout.metadata_path), pipeline_name, run_id)
    failed = [
        f"{node} ({execution.error})"
        for node, execution in run.items()
        if execution.state == "failed"
    ]
    if failed:
        raise RuntimeError(f"{', '.join(failed)} failed in run {run_id}")


def run_locally(
    config: PipelineConfig,
    layout: LocalLayout,
    beam_pipeline_args: Sequence[str] = (),
    *,
    enable_cache: bool = True,
    run_id: str | None = None,
    on_recovery: Callable[[Recovery], None] | None = None,
    on_window: Callable[[WindowPlan], None] | None = None,
) -> str:
    """Runs the pipeline end to end with LocalDagRunner; returns the run id.

    Each component's wall and CPU time is recorded on its execution
    (``tfrecord_pipelines.local.component_costs``).

    Call it under the output folder's lock (``tfrecord_pipelines.local.output_lock``): it
    first puts right what an interrupted run left (``recover``), and after
    the run moves the pushed model into the serving folder once ML Metadata
    records the push.

    Args:
      config: the pipeline's settings; its serving_dir should be ``layout.serving_dir``.
      layout: where the run's artifacts and metadata go.
      beam_pipeline_args: Beam options; DEFAULT_BEAM_ARGS come first, so later
        ones override them (``beam_args.local_beam_args``).
      enable_cache: reuse earlier executions with the same inputs, parameters and code.
      run_id: the pipeline run's id (its ML Metadata context); default: ``new_run_id()``.
      on_recovery: called with what ``recover`` found, before the run starts.
      on_window: with ``config.window``: called with the window's plan before
        its missing conversions start (``daily.window``).
    """
    os.makedirs(os.path.dirname(layout.metadata_path), exist_ok=True)
    recovery = recover(layout, config.name)
    if on_recovery:
        on_recovery(recovery)
    beam_args = local_beam_args(beam_pipeline_args)
    if config.source.spans and config.span is None:
        # Pinned when the run starts: ExampleGen, the window and the drift check agree on it.
        config = dataclasses.replace(config, span=config.source.spans.find().span)
    if config.window:
        with metered_executors() as costs:
            try:
                _backfill(config, layout, beam_args, on_window)
            finally:
                with contextlib.suppress(Exception):
                    record_costs(open_store(layout.metadata_path), costs)
    pipeline = create_pipeline(
        config,
        layout.pipeline_root,
        compare_to_latest_blessed=True,
        enable_cache=enable_cache,
        publish_after_metadata=True,
        metadata_connection_config=metadata.sqlite_metadata_connection_config(layout.metadata_path),
        beam_pipeline_args=beam_args,
    )
    run_id = run_id or new_run_id()

    def settle() -> None:
        settle_staged_models(
            open_store(layout.metadata_path), config.name, PUSHER_ID, layout.serving_dir
        )

    with metered_executors() as costs:
        try:
            _RunnerWithRunId(run_id).run(pipeline)
            _raise_failed_nodes(layout, config.name, run_id)
        except BaseException:
            # A failed run publishes nothing; the next run retries the clean-up if this fails too.
            with contextlib.suppress(Exception):
                settle()
            raise
        finally:
            with contextlib.suppress(Exception):
                record_costs(open_store(layout.metadata_path), costs)
    settle()
    return run_id
