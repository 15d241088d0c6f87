"""Transform's analysis against the statistics pass, per train row, in one process.

Reads a finished run's train split (ShardedExampleGen's shards and statistics,
SchemaGen's or the curated schema) and times, one after the other:

- reading: the shards read and decoded into Arrow record batches, nothing else;
- statistics: the same, and TFDV's GenerateStatistics on the batches with
  ExampleGen's options. The difference is what describing the rows costs
  inside ExampleGen's pass, where the columns are in memory: the yardstick;
- tf.Transform: the built-in preprocessing_fn's analysis by tf.Transform's
  analyzers (tft_beam.AnalyzeDataset reading and decoding the shards), as
  Transform ran before it took the statistics;
- from statistics: the same preprocessing_fn given the statistics, its graph
  written in place (tf.Transform's analyze_in_place): what Transform runs now.

Beam's DirectRunner with one worker, in this process; CPU = user + sys.

    .venv/bin/python benchmarks/transform_analysis.py \\
        --pipeline-root output/bench-pipeline-scale/run-1500000/pipeline_root/scale
"""

from __future__ import annotations

import argparse
import glob
import os
import resource
import sys
import tempfile
import time

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, _ROOT)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _latest(pattern: str) -> str:
    found = sorted(glob.glob(pattern), key=os.path.getmtime)
    if not found:
        raise SystemExit(f"error: nothing matches {pattern}: give a finished run's pipeline root.")
    return found[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipeline-root", required=True, help="a finished run's pipeline root")
    parser.add_argument("--label", default="label")
    args = parser.parse_args()
    root = args.pipeline_root
    shards = os.path.join(_latest(f"{root}/ShardedExampleGen/examples/*"), "Split-train", "*")
    statistics_file = os.path.join(
        _latest(f"{root}/ShardedExampleGen/statistics/*"), "Split-train", "FeatureStats.pb"
    )
    schema_file = _latest(f"{root}/*SchemaGen/schema/*/schema.pbtxt")

    import apache_beam as beam
    import tensorflow_data_validation as tfdv
    import tensorflow_transform.beam as tft_beam
    from tensorflow_metadata.proto.v0 import schema_pb2
    from tensorflow_transform import impl_helper
    from tfx.utils import io_utils
    from tfx_bsl.public import tfxio

    from tfrecord_pipelines.components.example_gen.statistics import stats_options
    from tfrecord_pipelines.components.task import Task
    from tfrecord_pipelines.components.transform import preprocessing_fn
    from tfrecord_pipelines.components.transform.in_place_analysis import has_analyzers
    from tfrecord_pipelines.components.transform.statistics_analysis import STATISTICS_PATH_KEY

    schema = io_utils.parse_pbtxt_file(schema_file, schema_pb2.Schema())
    source = tfxio.TFExampleRecord(file_pattern=shards, schema=schema)
    options = beam.options.pipeline_options.PipelineOptions(
        ["--direct_running_mode=in_memory", "--direct_num_workers=1"]
    )
    config = Task(label=args.label).to_custom_config()
    with_statistics = {**config, STATISTICS_PATH_KEY: [statistics_file]}
    print(f"train split: {shards}")

    results = {}

    def read(statistics: bool) -> None:
        with beam.Pipeline(options=options) as pipeline:
            data = pipeline | source.BeamSource()
            if statistics:
                _ = data | tfdv.GenerateStatistics(stats_options("csv")) | beam.Map(str)
            _ = data | beam.Map(lambda batch: batch.num_rows) | beam.CombineGlobally(sum)

    rows = tfdv.load_stats_binary(statistics_file).datasets[0].num_examples
    cpu, wall = _cpu(), time.time()
    read(statistics=False)
    results["read and decode the shards (no analysis)"] = (_cpu() - cpu, time.time() - wall)
    cpu, wall = _cpu(), time.time()
    read(statistics=True)
    results["read, decode and describe (TFDV)"] = (_cpu() - cpu, time.time() - wall)
    reading = results["read and decode the shards (no analysis)"]
    described = results["read, decode and describe (TFDV)"]
    # ExampleGen describes the columns it has just encoded: the statistics' own cost.
    results["statistics alone (the two above's difference)"] = tuple(
        a - b for a, b in zip(described, reading, strict=True)
    )

    cpu, wall = _cpu(), time.time()
    with beam.Pipeline(options=options) as pipeline, tft_beam.Context(temp_dir=tempfile.mkdtemp()):
        data = pipeline | source.BeamSource()
        _ = (data, source.TensorAdapterConfig()) | tft_beam.AnalyzeDataset(
            lambda inputs: preprocessing_fn(inputs, config)
        )
    results["tf.Transform's analyzers (read, decode, analyze)"] = (_cpu() - cpu, time.time() - wall)

    typespecs = source.TensorAdapter().OriginalTypeSpecs()
    fn = lambda inputs: preprocessing_fn(inputs, with_statistics)  # noqa: E731
    if has_analyzers(fn, typespecs):
        print("note: the statistics left analyzers; Transform would read the data")
    cpu, wall = _cpu(), time.time()
    # The feature specs are read only in tf.compat.v1 mode.
    impl_helper.analyze_in_place(fn, False, typespecs, typespecs, tempfile.mkdtemp())
    results["from the statistics (graph written in place)"] = (_cpu() - cpu, time.time() - wall)

    base = results["statistics alone (the two above's difference)"][0] / rows
    print(f"\n{rows:,} train rows\n")
    print("| step | CPU s | wall s | CPU µs a row | x statistics |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, (cpu_s, wall_s) in results.items():
        per_row = cpu_s / rows
        print(
            f"| {name} | {cpu_s:.1f} | {wall_s:.1f} | {per_row * 1e6:.2f} | {per_row / base:.2f}x |"
        )


if __name__ == "__main__":
    main()
