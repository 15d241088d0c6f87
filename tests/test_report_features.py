"""The run report's features and ExampleGen's page in KFP's UI show each feature as the pipeline
treats it: an integer the schema marks categorical (penguins' ``year``) as counts of its
values, not a mean of years."""

import re

import pandas as pd
import pytest
import tensorflow_data_validation as tfdv

from kfp_ui_layout import render_markdown, shown_text
from tfrecord_pipelines.components.data_source.files import CSV
from tfrecord_pipelines.components.example_gen import summary_page
from tfrecord_pipelines.components.example_gen.shard_plan_report import ShardPlanReport
from tfrecord_pipelines.components.example_gen.statistics import stats_options
from tfrecord_pipelines.report.statistics import feature_views

YEARS = [2007] * 3 + [2008] * 5 + [2009] * 2


@pytest.fixture(scope="module")
def statistics():
    """TFDV's statistics as ShardedExampleGen writes them: ``year`` counted (categorical in
    the schema), ``flipper`` a plain number."""
    frame = pd.DataFrame({"year": YEARS, "flipper": [float(i) for i in range(len(YEARS))]})
    return tfdv.generate_statistics_from_dataframe(frame, stats_options(CSV, ["year"]))


@pytest.fixture(scope="module")
def views(statistics):
    return {view.name: view for view in feature_views({"train": statistics.datasets[0]}, {})}


def test_a_categorical_integer_is_shown_as_counts_of_its_values(views):
    year = views["year"]
    train = year.splits["train"]
    assert year.type == "INT, categories"
    assert train.numbers == {} and train.buckets == [] and train.quantiles == []
    assert train.unique == 3
    assert train.top == {"2008": 0.5, "2007": 0.3, "2009": 0.2}
    # A bar per year, labelled with the year: no axis of 2007.5.
    assert year.chart and "2008" in year.chart and "2007.5" not in year.chart


def test_a_number_keeps_its_summary_and_histogram(views):
    flipper = views["flipper"]
    train = flipper.splits["train"]
    assert flipper.type == "FLOAT"
    assert train.numbers["mean"] == pytest.approx(4.5)
    assert train.buckets and not train.top and not train.categorical


def test_example_gens_page_in_kfps_ui_counts_a_categorical_integers_values(statistics, tmp_path):
    path = tmp_path / "FeatureStats.pb"
    path.write_bytes(statistics.SerializeToString())
    plan = ShardPlanReport(
        span=0, version=None, input_pattern="*.csv", target_shard_bytes=0, num_readers=None,
        num_shards=None, compression="GZIP", records_read=10, records_written=10, quarantined=0,
        quarantined_by_reason={}, splits={},
    )  # fmt: skip
    # As KFP's UI renders the page: each table row's cells, as a reader sees them.
    rendered = render_markdown(summary_page.render(plan, {"train": str(path)}))
    rows = {
        cells[0]: cells
        for cells in (
            [shown_text(cell).strip() for cell in re.findall(r"<td>(.*?)</td>", row)]
            for row in re.findall(r"<tr>(.*?)</tr>", rendered)
        )
        if cells
    }
    assert rows["year"] == [
        "year", "int, categories", "0.0%", "3 distinct; most common: 2008 (5), 2007 (3), 2009 (2)"
    ]  # fmt: skip
    assert "mean 4.5" in rows["flipper"][3]
