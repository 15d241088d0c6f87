"""The project's components for plain KFP pipelines: container components (``definitions``),
the entry point that runs them in the image (``entry``), and the TFX component each one runs
(``adapters``)."""
