"""Time in recall (ADR 0017): times given as expressions, periods named in queries, and the
event times stored texts state about themselves.

Reading dates is left to ``dateparser`` (a maintained library; imported on first use, since it
costs ~0.1 s to import and ~0.1 s to load its English data on the first parse). What this module
adds is the judgement of what it returns, because a date parser finds dates everywhere: in
"Who may attend?" ("may"), "She is 30 years old" (a date 30 years ago), "We met" ("We" as
Wednesday). A span it finds counts as a time expression only when it holds

* a day word: yesterday, today, tonight, tomorrow;
* "ago" with a number or unit ("four weeks ago");
* last / next / this / past / previous before a unit, a month or a weekday ("last March",
  "next week"), the marker inside the span or the word just before it;
* a month or weekday name next to a number ("may 2023", "March 3"), or written with a capital
  after a word such as in, on, during, since, until ("in March", "on Friday"; not "hiking with
  June");
* a year from 1900 to 2100, or a date of numbers ("2024-01-15", "15/01/2024").

And a query is looked at only when one of its words is one of those words or has a digit, so a
query without them never loads the parser and ranks exactly as it did.

A span becomes a period: the day, the week (Monday to Sunday), the month or the year it names.
A few kinds of span the parser misreads or misses are read here instead (``_own_spans``, ADR
0031): "the past two months" (a span that ends today), "this week", "a few weeks ago", "over
the weekend".
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Any

from clawmemory.config import TimeSettings, zone
from clawmemory.errors import InvalidInputError
from clawmemory.validation import check_time

__all__ = [
    "TIME_FILTERS",
    "Period",
    "asks_order",
    "asks_when",
    "event_time_from_text",
    "filter_times",
    "order_factors",
    "query_periods",
    "resolve_time",
    "states_time",
    "time_factor",
    "warm_parser",
    "zone",
]

DAY = 86_400.0
_MONTHS = frozenset([
    "january", "february", "march", "april", "may", "june", "july", "august", "september",
    "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec",
])
# Weekdays in full only: "sat", "sun" and "wed" are words.
_WEEKDAYS = frozenset([
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"])
_UNITS = frozenset([
    "day", "days", "week", "weeks", "month", "months", "year", "years", "fortnight"])
_DAY_WORDS = frozenset(["yesterday", "today", "tonight", "tomorrow"])
_MARKERS = frozenset(["last", "next", "this", "past", "previous"])
# Words that put a month or weekday name in time ("in June", "on Friday"); without one, a
# name is a name ("hiking with June", "May said").
_PREPOSITIONS = frozenset([
    "in", "on", "during", "since", "until", "till", "before", "after", "by", "through",
    "throughout", "early", "late", "mid", "of", "from", "last", "next", "this"])
_TRIGGERS = _MONTHS | _WEEKDAYS | _DAY_WORDS | frozenset({"ago", "last", "next", "past",
                                                            "previous"})
_WORD = re.compile(r"\w+")  # splits text into words; the dates themselves are dateparser's
_LOCK = threading.Lock()  # dateparser's parsers keep caches: one parse at a time


@dataclass(frozen=True, slots=True)
class Period:
    """A span of time named by an expression: [start, end) in epoch seconds."""

    text: str
    start: float
    end: float


# --- the parser ----------------------------------------------------------------------------------
_SETTINGS = {"PREFER_DATES_FROM": "past", "RETURN_AS_TIMEZONE_AWARE": False}


def _parse(text: str, base: datetime, languages: tuple[str, ...]) -> tuple[datetime, str] | None:
    """One expression -> (the moment it names, its period), read against ``base``."""
    try:
        from dateparser.date import DateDataParser
    except ImportError as exc:  # pragma: no cover - a core dependency
        raise InvalidInputError("time expressions need dateparser: pip install dateparser"
                                ) from exc
    with _LOCK:
        try:  # a parser per base time: dateparser caches its settings, so this is cheap
            data = DateDataParser(languages=list(languages),
                                  settings={**_SETTINGS, "RELATIVE_BASE": base}
                                  ).get_date_data(text)
        except (ValueError, OverflowError, TypeError):
            return None
    if data.date_obj is None:
        return None
    return data.date_obj.replace(tzinfo=None), str(data.period or "day")


def _search(text: str, base: datetime, languages: tuple[str, ...]) -> list[str]:
    """The spans of ``text`` the parser takes for dates (unjudged)."""
    from dateparser.search import search_dates

    with _LOCK:
        try:
            found = search_dates(text, languages=list(languages),
                                 settings={**_SETTINGS, "RELATIVE_BASE": base})
        except (ValueError, OverflowError, TypeError):
            return []
    return [span for span, _ in found or ()]


def _window(moment: datetime, period: str) -> tuple[datetime, datetime]:
    day = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    if period == "week":
        start = day - timedelta(days=day.weekday())
        return start, start + timedelta(days=7)
    if period == "month":
        start = day.replace(day=1)
        return start, (start + timedelta(days=32)).replace(day=1)
    if period == "year":
        start = day.replace(month=1, day=1)
        return start, start.replace(year=start.year + 1)
    return day, day + timedelta(days=1)


def _epoch(moment: datetime, tz: tzinfo) -> float:
    return moment.replace(tzinfo=tz).timestamp()


def _local(now: float, tz: tzinfo) -> datetime:
    return datetime.fromtimestamp(now, tz).replace(tzinfo=None)


# --- judging what the parser found ---------------------------------------------------------------
def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _time_words(text: str) -> bool:
    return any(w.lower() in _TRIGGERS or any(c.isdigit() for c in w) for w in _words(text))


def _triggered(text: str) -> bool:
    """Whether the parser could find an accepted span in ``text`` (``_accepted``). A number
    alone never makes one: ``_accepted`` wants a year, a date's separators ("15/07/23"), or a
    marker with a unit or a name beside it; the other markers and names trigger by
    themselves, and a number beside "this" or a unit word is sent on too, to be safe.
    Queries often hold numbers ("my 2 cats", an order number), and the parser costs ~1.5 ms
    of the recall's critical path."""
    words = [w.lower() for w in _words(text)]
    if any(w in _TRIGGERS for w in words):
        return True
    if not any(c.isdigit() for c in text):
        return False
    return (any(_is_year(w) for w in words) or any(w in _UNITS or w == "this" for w in words)
            or "-" in text or "/" in text)


def _may_name_a_day(text: str) -> bool:
    """Whether ``text`` may name a single day (what ``event_time_from_text`` accepts): a day
    word, "ago", "last" with a weekday, or a year with a month or in a date of numbers. Most
    stored texts have none, and the parser is not run on them."""
    low = {w.lower() for w in _words(text)}
    year = any(_is_year(w) for w in low)
    return bool(_DAY_WORDS & low or "ago" in low or ("last" in low and _WEEKDAYS & low)
                or (year and (_MONTHS & low or any(j in text for j in "-/"))))


def _date_word(word: str) -> bool:
    low = word.lower()
    return (low in _MONTHS or low in _WEEKDAYS or low in _UNITS or low in _DAY_WORDS
            or low in _MARKERS or low == "ago" or any(c.isdigit() for c in low))


def _trim(span: str) -> str:
    """The span from its first to its last date word ("on 15 July 2023 we" -> "15 July 2023";
    the parser takes "we" for Wednesday). Number words before a unit stay ("four weeks")."""
    words = _words(span)
    keep = [i for i, w in enumerate(words) if _date_word(w)]
    if not keep:
        return span
    first, last = keep[0], keep[-1]
    if first > 0 and words[first].lower() in _UNITS | {"ago"}:
        first -= 1  # "four weeks ago", "a month ago"
    start = span.find(words[first])
    end = span.rfind(words[last]) + len(words[last])
    return span[start:end] if 0 <= start < end else span


def _clean(text: str) -> str:
    """What the parser reads: possessives dropped ("yesterday's" is "yesterday")."""
    return text.replace("\u2019s", "").replace("'s", "")


def _is_year(word: str) -> bool:
    return len(word) == 4 and word.isdigit() and 1900 <= int(word) <= 2100


def _accepted(span: str, before: str) -> bool:
    """Whether a span the parser found is a time expression (module docstring). ``before``:
    the word preceding it."""
    words = _words(span)
    low = [w.lower() for w in words]
    has_number = any(w.isdigit() for w in low) or any(
        n in low for n in ("a", "an", "one", "two", "three", "four", "five", "six", "few"))
    names = _MONTHS | _WEEKDAYS
    if _DAY_WORDS & set(low):
        return True
    if "ago" in low and (has_number or _UNITS & set(low)):
        return True
    marked = bool(_MARKERS & set(low)) or before.lower() in _MARKERS
    if marked and (_UNITS | names) & set(low):
        return True
    for w, lw in zip(words, low, strict=True):
        if lw in names and (any(c.isdigit() for c in span) or (
                w[0].isupper() and before.lower() in _PREPOSITIONS)):
            return True
    if any(_is_year(w) for w in low):
        return True
    return any(c.isdigit() for c in span) and any(j in span for j in "-/") and len(
        [w for w in low if w.isdigit()]) >= 3


def _spans(text: str, base: datetime, languages: tuple[str, ...]) -> list[tuple[str, str]]:
    """(span, the word just before it) for each accepted span of ``text``."""
    out, pos = [], 0
    text = _clean(text)
    for found in _search(text, base, languages):
        span = _trim(found)
        at = text.find(span, pos)
        if at < 0:
            at = text.find(span)
        before_words = _words(text[max(0, at - 40):at]) if at > 0 else []
        before = before_words[-1] if before_words else ""
        if at >= 0:
            pos = at + len(span)
        if _accepted(span, before):
            out.append((span, before))
    return out


# Spans the date parser misreads or misses, read here instead (ADR 0031):
# * "the past two months", "the last 10 days", "this past week", "past year": a span that ends
#   now. The parser read them as the one month, week or day that long ago ("the past two
#   months" asked on 22 April was February), which ranked February's memories above the
#   concerts of March and April the question was about. A plain "last month" / "last week"
#   (no article, no count) is the calendar month or week before this one, and stays the
#   parser's; so is "the last week of March" (the final one). "The previous month" is the
#   calendar month before too (the parser: nothing).
# * "this week", "earlier this month", "this year": the calendar period so far (the parser:
#   nothing).
# * "a few weeks ago", "a couple of months ago": around that many units back (nothing).
# * "this weekend", "over the weekend", "last weekend": Saturday and Sunday (nothing).
_ROLLING = re.compile(
    r"\b(?:(?P<article>the|this)\s+)?(?P<marker>past|last|previous)\s+"
    r"(?:(?P<count>\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|few|couple(?:\s+of)?|several)\s+)?(?P<unit>day|week|fortnight|month|year)s?\b(?!\s+of\b)",
    re.IGNORECASE)
_THIS = re.compile(r"\b(?:earlier\s+)?this\s+(?P<unit>week|month|year)\b", re.IGNORECASE)
_FEW_AGO = re.compile(r"\b(?:a\s+)?(?P<count>few|couple(?:\s+of)?|several)\s+"
                      r"(?P<unit>day|week|month|year)s\s+ago\b", re.IGNORECASE)
_WEEKEND = re.compile(r"\b(?P<which>this|last|the\s+past|past|over\s+the)\s+weekend\b",
                      re.IGNORECASE)
_COUNTS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
           "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "few": 3,
           "couple": 2, "couple of": 2, "several": 4}
_UNIT_DAYS = {"day": 1, "week": 7, "fortnight": 14, "month": 30.44, "year": 365.25}
Span = tuple[datetime, datetime]


def _count(word: str | None) -> int:
    if word and word.isdigit():
        return int(word)
    return _COUNTS.get(" ".join((word or "one").lower().split()), 1)


def _back(today: datetime, n: float, unit: str) -> datetime:
    """The start of the day ``n`` units before ``today`` (a month: 30.44 days)."""
    return (today - timedelta(days=n * _UNIT_DAYS[unit.lower()])).replace(hour=0, minute=0)


def _rolling_span(m: re.Match[str], today: datetime) -> Span | None:
    marker, unit = m["marker"].lower(), m["unit"].lower()
    if marker == "previous" and not m["count"] and unit != "fortnight":
        return _window(_back(today, 1, unit), unit)  # "the previous month": the one before
    if not (marker == "past" or m["article"] or m["count"]):
        return None  # "last month": the calendar month before this one, the parser's
    return _back(today, _count(m["count"]), unit), today + timedelta(days=1)


def _this_span(m: re.Match[str], today: datetime) -> Span:
    start, _ = _window(today, m["unit"].lower())
    return start, today + timedelta(days=1)


def _few_ago_span(m: re.Match[str], today: datetime) -> Span:
    n = _count(m["count"])
    return _back(today, n + 1, m["unit"]), _back(today, n - 1, m["unit"]) + timedelta(days=1)


def _weekend_span(m: re.Match[str], today: datetime) -> Span:
    """The last weekend begun by today; "last weekend" on a weekend is the one before."""
    saturday = today - timedelta(days=(today.weekday() - 5) % 7)
    if m["which"].lower() == "last" and today.weekday() >= 5:
        saturday -= timedelta(days=7)
    return saturday, saturday + timedelta(days=2)


_READERS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str], datetime], Span | None]], ...] = (
    (_ROLLING, _rolling_span), (_THIS, _this_span), (_FEW_AGO, _few_ago_span),
    (_WEEKEND, _weekend_span))


def _own_spans(query: str, base: datetime) -> tuple[list[tuple[str, datetime, datetime]], str]:
    """The spans of ``query`` read here rather than by the parser, as (text, start, end) in
    whole days, and the query with them blanked out (what is left for the parser)."""
    today = base.replace(hour=0, minute=0, second=0, microsecond=0)
    found = []
    for pattern, read in _READERS:
        for m in pattern.finditer(query):
            span = read(m, today)
            if span is not None:
                found.append((m[0], *span))
                query = query[:m.start()] + " " * len(m[0]) + query[m.end():]
    return found, query


# --- what the rest of clawmemory calls -----------------------------------------------------------
@functools.lru_cache(maxsize=512)
def _query_periods(query: str, minute: int, tz: tzinfo, languages: tuple[str, ...]
                   ) -> tuple[Period, ...]:
    base = _local(minute * 60.0, tz)
    own, query = _own_spans(query, base)
    out = [Period(text, _epoch(start, tz), _epoch(end, tz)) for text, start, end in own]
    if own and not _triggered(query):
        return tuple(dict.fromkeys(out))  # nothing left for the parser: it is not loaded
    for span, before in _spans(query, base, languages):
        expr = f"{before} {span}" if before.lower() in _MARKERS else span
        parsed = _parse(expr, base, languages) or _parse(span, base, languages)
        if parsed is None or parsed[1] == "time":
            continue
        start, end = _window(*parsed)
        out.append(Period(expr.strip(), _epoch(start, tz), _epoch(end, tz)))
    return tuple(dict.fromkeys(out))


def query_periods(query: str, now: float, tz: tzinfo, languages: tuple[str, ...]
                  ) -> tuple[Period, ...]:
    """The periods ``query`` names, read against ``now`` (best-effort: an expression the
    parser cannot read is no period). Empty, without loading the parser, for a query with no
    word that could start a time expression."""
    if not (_triggered(query) or any(p.search(query) for p, _ in _READERS)):
        return ()
    return _query_periods(query, int(now // 60), tz, languages)


def warm_parser(cfg: TimeSettings) -> None:
    """Load the date parser now, where recall or storing will read times with it: its first
    use loads every locale's data (~0.25 s and ~14 MiB here), which the first question naming
    a time ("last summer", "three weeks ago") paid otherwise. For warm-ups (``Memory.open``'s,
    the servers')."""
    if cfg.query_boost <= 0 and not cfg.query_candidates and not cfg.from_text:
        return
    query_periods("three weeks ago", 0.0, zone(cfg.time_zone), tuple(cfg.languages))


# How a question asking for a time begins, or what it holds ("When did...", "What year...").
_WHEN_STARTS = ("when ", "since when", "how long ago", "what time ")
_WHEN_HOLDS = ("what date", "what year", "what month", "what day", "which year",
               "which month", "which day", "how long ago", "when did", "when was", "when is")


def asks_when(query: str) -> bool:
    """Whether the question asks for a time ("When did Caroline go to the support group?")."""
    low = " ".join(query.lower().split())
    return low.startswith(_WHEN_STARTS) or any(h in low for h in _WHEN_HOLDS)


# A question about the newest or the oldest of several occasions ("What lens did I buy most
# recently?", "When did I go there for the first time?"). "Which came first, X or Y?" is not
# one: it needs both occasions, whatever their order. Nor is "What did I initially think it
# was?" (a belief, not an occasion: with "initially" here, LongMemEval's answer fell from the
# top five sessions to the seventh).
_LATEST = re.compile(r"\b(?:most recent(?:ly)?|the last time|latest|currently|these days|"
                     r"nowadays|right now)\b", re.IGNORECASE)
_EARLIEST = re.compile(r"\b(?:the first time|earliest)\b", re.IGNORECASE)


def asks_order(query: str) -> str | None:
    """"latest" or "earliest" when the question asks for the newest or the oldest occasion."""
    if _LATEST.search(query):
        return "latest"
    if _EARLIEST.search(query):
        return "earliest"
    return None


def order_factors(when: dict[str, float], order: str, boost: float) -> dict[str, float]:
    """× (1 + boost) for the newest (or oldest) candidate, × 1 for the other end, linear in
    time between them."""
    if not when or boost <= 0:
        return {}
    lo, hi = min(when.values()), max(when.values())
    if hi <= lo:
        return {}
    return {m: 1.0 + boost * ((t - lo) if order == "latest" else (hi - t)) / (hi - lo)
            for m, t in when.items()}


def states_time(text: str) -> bool:
    """Whether a text holds a word that may name a time: a date, a month or weekday, a day word,
    "ago", "last", "next", or a number ("at 3pm", "on the 15th")."""
    return _time_words(text)


def time_factor(moment: float, periods: tuple[Period, ...], boost: float) -> float:
    """``1 + boost`` for a moment inside one of ``periods``; outside, less by the distance in
    units of the period's length (a month named: two weeks off still counts half), 1 beyond."""
    best = 0.0
    for p in periods:
        if p.start <= moment < p.end:
            return 1.0 + boost
        distance = p.start - moment if moment < p.start else moment - p.end
        best = max(best, 1.0 - distance / max(p.end - p.start, DAY))
    return 1.0 + boost * best


def resolve_time(value: Any, what: str, now: float, tz: tzinfo, languages: tuple[str, ...],
                 *, end: bool = False) -> float | None:
    """Epoch seconds from what a caller gave for ``since``/``until``/``as_of``: epoch seconds,
    a datetime, an ISO-8601 text, or an expression ("yesterday", "2 weeks ago", "last
    March"). A date or period names its start, or with ``end`` its end ("until 2024-01-31"
    includes the 31st); "N units ago" names that moment. Naive times are read in ``tz``."""
    if value is None or not isinstance(value, str):
        if isinstance(value, datetime) and value.tzinfo is None:
            value = value.replace(tzinfo=tz)
        return check_time(value, what)
    text = value.strip()
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return _expression(text, what, now, tz, languages, end)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=tz)
    if end and len(text) == 10:  # a date alone: until its end
        moment += timedelta(days=1)
    return check_time(moment, what)


def _expression(text: str, what: str, now: float, tz: tzinfo, languages: tuple[str, ...],
                end: bool) -> float:
    base = _local(now, tz)
    parsed = _parse(text, base, languages) if len(text) <= 200 else None
    if parsed is None:  # "last March": the parser reads the month, the marker is ours
        spans = _spans(text, base, languages) if len(text) <= 200 else []
        parsed = _parse(spans[0][0], base, languages) if len(spans) == 1 else None
    if parsed is None:
        raise InvalidInputError(
            f"{what}: cannot read {text[:64]!r} as a time; use ISO 8601 (2024-01-15,"
            " 2024-01-15T09:30:00Z), epoch seconds, or an expression such as 'yesterday',"
            " '2 weeks ago', 'last March'")
    moment, period = parsed
    if "ago" in (w.lower() for w in _words(text)) or period == "time":
        return _epoch(moment, tz)
    start, stop = _window(moment, period)
    return _epoch(stop if end else start, tz)


def event_time_from_text(text: str, reference: float, tz: tzinfo,
                         languages: tuple[str, ...]) -> tuple[float, str] | None:
    """The day a stored text says it is about, when it says so unambiguously: exactly one
    accepted expression, naming one day other than the reference's own ("yesterday",
    "3 days ago", "last Friday", "on 15 July 2023"; not "in March", "last week", "today",
    "on May 15" without a year).
    Returns (the start of that day, the expression), or None."""
    if not _may_name_a_day(text):
        return None
    base = _local(reference, tz)
    spans = _spans(text[:2000], base, languages)
    days = set()
    for span, before in spans:
        low = [w.lower() for w in _words(span)]
        if (_WEEKDAYS & set(low)) and before.lower() != "last" and "last" not in low:
            return None  # "on Friday": the last one or the next one?
        if _MONTHS & set(low) and not any(_is_year(w) for w in low):
            return None  # "on May 15": which year? (a birthday is every year)
        expr = f"{before} {span}" if before.lower() in _MARKERS else span
        parsed = _parse(expr, base, languages)
        if parsed is None or parsed[1] != "day":
            return None
        days.add((_window(parsed[0], "day")[0], expr.strip()))
    if len({d for d, _ in days}) != 1:
        return None
    day, expr = days.pop()
    if day == _window(base, "day")[0]:
        return None  # "today": the reference already says it
    return _epoch(day, tz), expr


TIME_FILTERS = ("since", "until", "created_since", "created_until", "as_of")


def filter_times(values: dict[str, Any], now: float, tz: tzinfo, languages: tuple[str, ...]
                 ) -> dict[str, float]:
    """``Filter`` fields from the time arguments of recall/list/count (``TIME_FILTERS``, each
    None, epoch seconds, a datetime, ISO-8601 or an expression): since/until on when the
    thing happened, created_since/created_until on creation, as_of. An "until" and an
    "as_of" date name the end of their day or period."""
    fields = {"since": "since", "until": "until", "created_since": "created_after",
              "created_until": "created_before", "as_of": "as_of"}
    out = {}
    for name, field in fields.items():
        value = values.get(name)
        if value is not None:
            stamp = resolve_time(value, name, now, tz, languages,
                                 end=name in ("until", "created_until", "as_of"))
            if stamp is not None:
                out[field] = stamp
    for lo, hi in (("since", "until"), ("created_after", "created_before")):
        if lo in out and hi in out and out[lo] >= out[hi]:
            raise InvalidInputError(f"{_label(lo)} must be earlier than {_label(hi)}")
    return out


def _label(field: str) -> str:
    return {"created_after": "created_since", "created_before": "created_until"}.get(field, field)
