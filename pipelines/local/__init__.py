"""Running the pipeline on this machine (LocalDagRunner) and keeping its output safe."""
