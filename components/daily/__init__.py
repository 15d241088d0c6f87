"""The window of spans, in one room: which spans a run's window holds (``window``), what it
builds on from earlier runs (``choices``: the window's conversions, the previous span, the
base model, the analyzer cache), and the two ways of finding them: TFX Resolvers over ML
Metadata on local runs (``resolvers``), and on Kubeflow the daily state in the object store
(``daily_state``) that SpanWindow reads and RecordRun writes (``component``)."""
