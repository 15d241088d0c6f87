"""A CustomResourceDefinition's schema as the API server checks an object against it, offline.

The schemas are kept in ``contracts/`` as JSON: a CRD's ``openAPIV3Schema`` of one
version, its ``description`` texts dropped (``write_schema``). Unknown fields fail, as
with kubectl's default ``--validate=strict`` (the server's Strict field validation).
The CEL rules (``x-kubernetes-validations``) are not run here: each contract module
checks the ones its objects meet, by hand, with the rule's text beside it.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

import jsonschema

CONTRACTS = Path(__file__).resolve().parent / "contracts"
# apimachinery's NameIsDNS1035Label: IsDNS1035Label, at most 63 characters.
_DNS_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS_1035_MAX = 63


def dns_1035(name: str) -> bool:
    """Whether NAME is a DNS-1035 label (IsDNS1035Label)."""
    return bool(_DNS_1035.fullmatch(name)) and len(name) <= _DNS_1035_MAX


def _strict(node):
    """The schema with unknown fields refused wherever it lists the known ones."""
    if isinstance(node, dict):
        node = {key: _strict(value) for key, value in node.items()}
        if (
            "properties" in node
            and "additionalProperties" not in node
            and not node.get("x-kubernetes-preserve-unknown-fields")
        ):
            node["additionalProperties"] = False
        return node
    if isinstance(node, list):
        return [_strict(value) for value in node]
    return node


@functools.cache
def _validator(name: str) -> jsonschema.Draft4Validator:
    return jsonschema.Draft4Validator(_strict(json.loads((CONTRACTS / name).read_text())))


def schema_errors(name: str, obj: dict) -> list[str]:
    """The complaints of schema ``contracts/NAME`` about OBJ, each as 'path: message'."""
    return [
        f"{'.'.join(str(p) for p in error.absolute_path) or '<root>'}: {error.message}"
        for error in _validator(name).iter_errors(obj)
    ]


def write_schema(crd_yaml: Path, version: str, name: str) -> None:
    """Writes ``contracts/NAME`` from the CRD in CRD_YAML, its VERSION's schema."""
    import yaml

    crd = yaml.safe_load(crd_yaml.read_text())
    [found] = [v for v in crd["spec"]["versions"] if v["name"] == version]

    def without_descriptions(node):
        if isinstance(node, dict):
            return {
                key: without_descriptions(value)
                for key, value in node.items()
                if not (key == "description" and isinstance(value, str))
            }
        if isinstance(node, list):
            return [without_descriptions(value) for value in node]
        return node

    schema = without_descriptions(found["schema"]["openAPIV3Schema"])
    (CONTRACTS / name).write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n")
