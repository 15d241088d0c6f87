"""The engines that convert: Beam (the runner of beam_pipeline_args) or Spark."""

BEAM = "beam"
SPARK = "spark"
ENGINES = (BEAM, SPARK)
