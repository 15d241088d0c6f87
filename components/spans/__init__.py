"""Data that arrives in spans: TFX's ``{SPAN}``, ``{VERSION}`` and date specs in a data path.

``events/day-{SPAN}/`` names one folder per span (``events/day-1/``,
``events/day-2/``, ...); ``events/{YYYY}-{MM}-{DD}/`` one per day, its span
the days since 1970-01-01; ``/v{VERSION}`` below a span's folder holds the
span's versions, of which the highest counts. The specs are TFX's
(``tfx.components.example_gen.utils``): ShardedExampleGen hands them to
TFX's ExampleGen driver, which picks the span it converts. This module lists
the same folders without importing TFX, so that the command line can check a
span's data (its format, label and columns) and name the spans of a window
before anything slow is imported; tests/test_spans.py holds the two to the
same answers.
"""

from __future__ import annotations

import dataclasses
import datetime
import re

from tfrecord_pipelines.components.storage import filesystem

SPAN_SPEC = re.compile(r"\{SPAN(?::(\d+))?\}")
VERSION_SPEC = re.compile(r"\{VERSION(?::(\d+))?\}")
DATE_SPECS = ("{YYYY}", "{MM}", "{DD}")
_ANY_SPEC = re.compile(r"\{(?:SPAN|VERSION)(?::\d+)?\}|\{YYYY\}|\{MM\}|\{DD\}")
_EPOCH = datetime.date(1970, 1, 1)
# A span asked for by name: the latest on disk.
LATEST = "latest"


def has_specs(path: str) -> bool:
    """Whether ``path`` holds a span, version or date spec."""
    return bool(_ANY_SPEC.search(path))


def date_of_span(span: int) -> datetime.date:
    """The day a date-spec span stands for (TFX: days since 1970-01-01)."""
    return _EPOCH + datetime.timedelta(days=span)


def span_of_date(day: datetime.date) -> int:
    """The span of a day under date specs (TFX's ``date_to_span_number``)."""
    return (day - _EPOCH).days


@dataclasses.dataclass(frozen=True)
class SpanFolder:
    """One span's data on disk.

    Attributes:
      span: the span's number (for date specs, days since 1970-01-01).
      version: its highest version, or None when the pattern has no {VERSION}.
      path: the folder of that version.
    """

    span: int
    version: int | None
    path: str


@dataclasses.dataclass(frozen=True)
class SpanPattern:
    """A data path with specs, split where the specs start.

    Attributes:
      base: the folder above the first spec: ExampleGen's ``input_base``.
      folder: the rest, relative to ``base``, specs included, e.g.
        ``day-{SPAN}`` or ``{YYYY}-{MM}-{DD}/v{VERSION}``: the span folders.
    """

    base: str
    folder: str

    def __post_init__(self):
        spans = SPAN_SPEC.findall(self.folder)
        dates = [spec for spec in DATE_SPECS if spec in self.folder]
        versions = VERSION_SPEC.findall(self.folder)
        where = f"{self.base}/{self.folder}"
        if spans and dates:
            raise ValueError(
                f"{where}: give {{SPAN}} or date specs ({{YYYY}}, {{MM}}, {{DD}}), not both."
            )
        if len(spans) > 1 or len(versions) > 1:
            raise ValueError(f"{where}: {{SPAN}} and {{VERSION}} may each appear once.")
        if dates and any(self.folder.count(spec) != 1 for spec in DATE_SPECS):
            raise ValueError(f"{where}: date specs need each of {{YYYY}}, {{MM}} and {{DD}} once.")
        if not spans and not dates:
            raise ValueError(f"{where}: {{VERSION}} needs a {{SPAN}} or date specs beside it.")

    @property
    def path(self) -> str:
        """The data path it was split from (``split_data_path`` gives it back)."""
        return f"{self.base.rstrip('/')}/{self.folder}"

    @property
    def is_dated(self) -> bool:
        """Whether spans are days named by date specs."""
        return DATE_SPECS[0] in self.folder

    def describe(self, span: int) -> str:
        """A span as a person reads it: its number, and its day under date specs."""
        return f"{span} ({date_of_span(span).isoformat()})" if self.is_dated else str(span)

    def folder_of(self, span: int, version: int | None = None) -> str:
        """The folder pattern with the span (and version, if given) filled in."""
        if self.is_dated:
            day = date_of_span(span)
            filled = (
                self.folder.replace("{YYYY}", f"{day.year:04d}")
                .replace("{MM}", f"{day.month:02d}")
                .replace("{DD}", f"{day.day:02d}")
            )
        else:
            filled = SPAN_SPEC.sub(lambda m: _padded(span, m.group(1)), self.folder)
        if version is not None:
            filled = VERSION_SPEC.sub(lambda m: _padded(version, m.group(1)), filled)
        return filled

    def spans(self) -> list[SpanFolder]:
        """Every span on disk, each at its highest version, in span order.

        Raises:
          ValueError: if a folder matches the pattern's wildcards but names no
            span (``day-x``, ``2026-02-30``), which TFX's driver refuses.
        """
        regex = re.compile("^" + _regex(self.folder) + "$")
        found: dict[int, SpanFolder] = {}
        glob = filesystem.glob(f"{self.base.rstrip('/')}/{_ANY_SPEC.sub('*', self.folder)}")
        for path in glob:
            relative = path[len(self.base.rstrip("/")) + 1 :].rstrip("/")
            if not filesystem.isdir(path):
                continue
            match = regex.match(relative)
            span = self._span_of(match) if match else None
            if span is None:
                # TFX's driver fails on it too, when it holds the format's files.
                raise ValueError(
                    f"Folder {path} looks like a span folder of {self.base}/{self.folder} "
                    "but names no span; rename it or move it out."
                )
            version = int(match.group("version")) if "version" in regex.groupindex else None
            known = found.get(span)
            if known is None or (version or 0) > (known.version or 0):
                found[span] = SpanFolder(span, version, path)
        return [found[span] for span in sorted(found)]

    def _span_of(self, match: re.Match) -> int | None:
        if not self.is_dated:
            return int(match.group("span"))
        try:
            day = datetime.date(int(match["year"]), int(match["month"]), int(match["day"]))
        except ValueError:
            return None  # 2026-02-30 is no day: not a span folder
        return span_of_date(day)

    def find(self, span: int | None = None) -> SpanFolder:
        """The latest span on disk, or ``span``.

        Raises:
          ValueError: naming the folder looked for, if there is no span or not that one.
        """
        found = self.spans()
        if span is None:
            if not found:
                raise ValueError(
                    f"No span of {self.base}/{self.folder} is on disk: no folder matches "
                    f"{self.base}/{_ANY_SPEC.sub('*', self.folder)}."
                )
            return found[-1]
        for folder in found:
            if folder.span == span:
                return folder
        raise ValueError(
            f"Span {self.describe(span)} is missing: no folder {self.base}/"
            f"{self.folder_of(span)} (latest on disk: "
            f"{self.describe(found[-1].span) if found else 'none'})."
        )


def _padded(value: int, width: str | None) -> str:
    return str(value).zfill(int(width)) if width else str(value)


def _regex(folder: str) -> str:
    """The folder pattern as a regex with named groups for its specs."""
    parts, last = [], 0
    for match in _ANY_SPEC.finditer(folder):
        parts.append(re.escape(folder[last : match.start()]))
        spec = match.group(0)
        width = re.search(r":(\d+)", spec)
        digits = rf"\d{{{width.group(1)}}}" if width else r"\d+"
        if spec.startswith("{SPAN"):
            parts.append(rf"(?P<span>{digits})")
        elif spec.startswith("{VERSION"):
            parts.append(rf"(?P<version>{digits})")
        else:
            name, size = {"{YYYY}": ("year", 4), "{MM}": ("month", 2), "{DD}": ("day", 2)}[spec]
            parts.append(rf"(?P<{name}>\d{{{size}}})")
        last = match.end()
    parts.append(re.escape(folder[last:]))
    return "".join(parts)


def split_data_path(path: str) -> SpanPattern | None:
    """Splits a data path at its first spec; None if it has none.

    Specs name folders: ``events/day-{SPAN}/`` or ``events/{YYYY}/{MM}/{DD}``,
    not files; the format's files are read inside each span's folder.

    Raises:
      ValueError: if a spec is malformed, repeated, or the specs mix spans and dates.
    """
    parts = path.rstrip("/").split("/")
    first = next((i for i, part in enumerate(parts) if has_specs(part)), None)
    if first is None:
        if "{" in path and re.search(r"\{[A-Z]+[^}]*\}", path):
            raise ValueError(
                f"{path}: unknown spec; the specs are {{SPAN}}, {{SPAN:WIDTH}}, {{VERSION}}, "
                "{VERSION:WIDTH}, {YYYY}, {MM} and {DD}."
            )
        return None
    base = "/".join(parts[:first]) or "."
    return SpanPattern(base=base, folder="/".join(parts[first:]))


def check_span_settings(
    data: str, pattern: SpanPattern | None, *, span: int | str | None, window: int | None
) -> None:
    """Raises ValueError naming the setting if a span or a window is asked of ``data``, whose
    path (``pattern``: its specs, None for none) names no spans."""
    if pattern is not None:
        return
    for setting, value in (("span", span), ("window", window)):
        if value is not None:
            raise ValueError(
                f"{setting} {value}: {data} names no spans; name its span folders with "
                "{SPAN} or {YYYY}-{MM}-{DD}, e.g. 'events/day-{SPAN}/'."
            )


def parse_span(text: str | int | None) -> int | None:
    """A span asked for: a number (``31``), a day (``2026-11-25`` or ``20261125``, for date
    specs: its days since 1970-01-01), a day less some days (``2026-11-26-1d``: the day
    before, as a schedule asks for the day that has just ended), or ``latest``, ``""`` or
    None for the latest on disk.

    Raises:
      ValueError: if ``text`` is none of these.
    """
    if text is None or str(text).strip().lower() in ("", LATEST):
        return None
    if isinstance(text, int):
        span = text
    else:
        text = text.strip()
        day = re.fullmatch(r"(\d{4})-?(\d{2})-?(\d{2})(?:-(\d+)d)?", text)
        if day:
            try:
                date = datetime.date(int(day[1]), int(day[2]), int(day[3]))
            except ValueError:
                raise ValueError(f"Span {text!r} is not a day of the calendar.") from None
            return span_of_date(date) - int(day[4] or 0)
        if not re.fullmatch(r"\d+", text):
            raise ValueError(
                f"Span {text!r}: give a span number (31), a day (2026-11-25, 20261125), a day "
                "less some days (2026-11-26-1d) or latest."
            )
        span = int(text)
    if span < 0:
        raise ValueError(f"Span {span} is negative; spans count from 0.")
    return span
