"""The command line's output carries no library warning a user cannot act on, and keeps the
project's own."""

import warnings

import pytest

from tfrecord_pipelines.cli import main


def _shown(verbose: bool, monkeypatch) -> list[tuple[str, str]]:
    # Set, so that the filter leaves the environment of the tests after this one alone.
    monkeypatch.setenv("PYTHONWARNINGS", "default")
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()
        main.filter_warnings(verbose)
        for category, module in (
            (FutureWarning, "google.api_core._python_version_support"),
            (DeprecationWarning, "tfx.types.artifact"),
            (UserWarning, "tensorflow_transform.beam.impl"),
            (UserWarning, "tfrecord_pipelines.components.trainer.run"),
            (FutureWarning, "tfrecord_pipelines.report.run_summary"),
        ):
            warnings.warn_explicit("notice", category, f"{module}.py", 1, module=module)
    return sorted((w.category.__name__, w.filename[:-3]) for w in caught)


@pytest.mark.parametrize("verbose", [False, True])
def test_library_notices_are_filtered_and_the_projects_warnings_kept(verbose, monkeypatch):
    shown = _shown(verbose, monkeypatch)
    ours = [
        ("FutureWarning", "tfrecord_pipelines.report.run_summary"),
        ("UserWarning", "tfrecord_pipelines.components.trainer.run"),
    ]
    # --verbose shows a library's other warnings, never its notices about itself.
    theirs = [("UserWarning", "tensorflow_transform.beam.impl")] if verbose else []
    assert shown == sorted(ours + theirs)
