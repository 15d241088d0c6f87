"""An API server's refusal as one line: the message of the JSON body OpenAPI clients keep.

Both Kubernetes' and KFP's generated clients raise an ``ApiException`` with the HTTP
status, reason and body; the body is JSON with a ``message`` (Kubernetes' Status) or
an ``error_message`` (KFP's), sometimes several lines long.
"""

from __future__ import annotations

import json
from typing import Any

MAX_MESSAGE_CHARS = 300


def message_of(error: Any) -> str:
    """The server's message in ERROR's body, folded onto one line ("" when there is none)."""
    body = error.body.decode(errors="replace") if isinstance(error.body, bytes) else error.body
    body = body or ""
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        body = parsed.get("message") or parsed.get("error_message") or body
    return " ".join(str(body).split())[:MAX_MESSAGE_CHARS]
