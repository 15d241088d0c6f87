"""Text shown as written on a Markdown page for Kubeflow Pipelines' UI.

The UI renders system.Markdown with markdown-to-jsx (kubeflow/pipelines 7b70c7b95f,
frontend/src/components/viewers/MarkdownViewer.tsx; 7.7.17 in its lock), which reads
``_`` and ``*`` inside a word as emphasis: ``bill_length_mm`` would show as
"bill<em>length</em>mm", and ``|`` in a cell would end it. What the data or the user
names (features, values, classes, metrics, reasons) goes through ``markdown_text``:
every ASCII punctuation mark escaped, which CommonMark and markdown-to-jsx show as the
mark itself.
"""

from __future__ import annotations

import re

_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def markdown_text(text: object) -> str:
    """TEXT with each ASCII punctuation mark backslash-escaped: shown as written."""
    return _PUNCTUATION.sub(r"\\\1", str(text))
