"""An offline heuristic for names, tuned for what recall needs from dialogue and notes.

It finds runs of capitalised words ("Caroline", "New York", "Bank of America"), acronyms
("LGBTQ", "NASA") and identifiers ("PostgreSQL", "GPT-4", "llama3", ``sqlite-vec`` in
backticks). English capitalises every sentence's first word, so a run that starts a sentence
loses its leading common words ("Yesterday Caroline went" -> "Caroline", "Hey Mel" -> "Mel")
while a first word that is not common is kept ("Caroline went" -> "Caroline"). A word seen in
lower case elsewhere in the same text is common there too. Types come from cheap cues: titles
("Dr Smith"), greetings and speaker labels ("Hey Mel", "Mel: ..."), reporting verbs ("Mel
said"), organisation and place suffixes ("Acme Corp", "Baker Street"), identifier shapes. With
no cue the type is ``other``: a stronger provider (spaCy, LLM) may name it later.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from functools import cache

from clawmemory.entities.base import EntityType, Mention, resolve_overlaps

__all__ = ["NamesProvider"]



def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Words that never start or end a name, wherever they stand (pronouns, determiners,
# prepositions, conjunctions, interjections). Modal verbs are not here: "with Will" is a name.
FUNCTION = _words("""
a an the this that these those my your his her its our their me him us them i you he she it we
they myself yourself ourselves themselves and or but nor so yet for if then than because
although though while unless until since as of in on at to from by with about into onto over
under after before between through during without within among against upon via per is am are
was were be been being do does did have has had not no yes yeah yep yup nope ok okay oh ah aw
hey hi hello bye wow hmm huh um uh lol omg haha hehe thanks thank please sorry what who whom
whose which where when why how there here all any some each every both either neither none
just also very really too only even still already again ever never always often sometimes
""")

# Words that start sentences without being names: at a sentence start they are dropped.
STARTERS = FUNCTION | _words("""
will would shall should can could may might must let lets go going went gone get got getting
make made making take took taking see saw seen look looking looked looks think thought
thinking know knew known want wanted need needed love loved like liked hope hoped hoping wish
wished feel felt feeling feels try tried trying keep kept remember remembered forget forgot tell
told say said ask asked give gave find found come came coming call called check checked send
sent bring brought buy bought use used help helped work worked working start started stop
stopped wait waited play played playing read write wrote watch watched watching listen talk
talked meet met visit visited move moved live lived stay stayed leave left enjoy enjoyed pick
spent spend show showed sounds sound seems seem glad happy sad proud excited yesterday today
tonight tomorrow now later soon recently lately last next first finally anyway anyways besides
however meanwhile otherwise instead actually basically honestly seriously definitely
absolutely totally literally maybe perhaps probably hopefully luckily unfortunately
fortunately sadly clearly obviously apparently surely sure great good nice cool awesome
amazing wonderful fantastic excellent perfect fine right true exactly indeed agreed congrats
congratulations welcome dear well alright thing things something anything nothing everything
someone anyone everyone nobody people guys folks man dude buddy friend friends family life
time day days week weeks month months year years morning afternoon evening night weekend lots
such many much more most less least few several other another same own once twice again
speaking talking regarding btw fyi note remind reminder update todo done mail email text
message ping ask add fix run install set grab share post join buy order book plan
gonna gotta wanna aww awww woah whoa woohoo yay yayy nah oof ugh phew yum yummy mmm ttyl yea
gotcha cheers ooh oops yikes meh plus whenever wherever whatever anytime especially
appreciate guess catch believe hang heard crazy lucky hard funny pretty best tough together
impressive exciting according based answer describe explain name list super way one long
little highly cherish
""")
# A sentence's first word ending like this is a verb form or an interjection, not a name, when
# nothing else in the text vouches for it ("Having fun!", "Exploring the coast", "Aww").
GERUND = re.compile(r"^[A-Z][a-z]{2,}ing$")
DRAWN_OUT = re.compile(r"(.)\1\1")  # "Awww", "Mmm", "Sooo"

# At a sentence start these bind to a following name ("New York", "Great Britain").
BINDING = _words("""
new north south east west northern southern eastern western great united good big little old
red blue black white green golden royal national central upper lower grand high long fort
mount lake port cape san santa saint st los las el
""")

# Capitalised everywhere in English without naming anything; they also break runs.
ALWAYS_SKIP = _words("""
i monday tuesday wednesday thursday friday saturday sunday january february march april may
june july august september october november december ok okay
""")
CAPS_SKIP = _words("""
OK LOL OMG BTW FYI ASAP TBH IMO IMHO AM PM TV ID PS AKA DIY FAQ ETA RIP TLDR WTF IDK NP THX
PLS BRB GG XD AI OK TL DR YES NO
""")
CONNECTORS = _words("of the de da di del della van von der den la le du bin al y")
TITLES = "Mr|Mrs|Ms|Miss|Mx|Dr|Prof|Sir|Dame|Lord|Lady|Rev|Capt|Sgt|Coach|Uncle|Aunt|Auntie"
TITLE_WORDS = frozenset(TITLES.casefold().split("|"))
ORG_SUFFIX = _words("""
inc corp corporation ltd llc gmbh co company group labs lab foundation university college
institute bank association society club team agency department ministry school academy
hospital church center centre council committee party union studios studio technologies
systems partners
""")
LOC_SUFFIX = _words("""
street st avenue ave road rd boulevard lane city county river lake mountain mountains park
beach island islands bay valley state province airport station square bridge
""")
LOC_PREFIX = _words("mount lake cape fort port")
NAME_PREFIXES = ("Mc", "Mac", "De", "Di", "Da", "La", "Le", "Van", "Von", "Du", "O'", "O’")
TLDS = _words("com org net io dev ai co uk de fr app edu gov me info xyz")

# A sentence-initial word followed by one of these is a verb: "Mail me", "Ping them".
OBJECTS = _words("me us him her them it the a an this that my your our his their")
MAX_RUN = 6
CUE_WINDOW = 48


class _Kind(Enum):
    NAME = "name"  # Capitalised word
    CAPS = "caps"  # acronym
    IDENT = "ident"  # CamelCase, letters+digits, snake_case
    CONNECTOR = "connector"  # of, the, de, van... (only inside a run)
    BREAK = "break"  # ends any run


@dataclass(frozen=True, slots=True)
class _Tok:
    word: str  # possessive 's removed
    start: int
    end: int
    kind: _Kind
    embedded: bool = False


@cache
def _res() -> dict[str, re.Pattern[str]]:
    return {
        "token": re.compile(r"[^\W_](?:[\w+&]|[-.'’](?=[^\W_]))*"),
        "possessive": re.compile(r"['’]s$", re.IGNORECASE),
        "contraction": re.compile(r"(?:n['’]t|['’](?:m|ve|ll|d|re|t))$", re.IGNORECASE),
        "camel": re.compile(r"[a-z][A-Z]"),
        "digit_ident": re.compile(r"^[^\W\d_](?=[\w.-]*\d)(?=(?:[^\W\d_][\w.-]*){2})[\w.-]*$"),
        "snake": re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$"),
        "dotted": re.compile(r"^[a-z][a-z0-9_-]*(?:\.[a-z0-9_-]+)*\.([a-z]{2,6})$"),
        "backtick": re.compile(r"`([^`\s]{2,64})`"),
        "gap": re.compile(r"^[ \t]+(?:&[ \t]+)?$"),
        "title_before": re.compile(rf"\b(?:{TITLES})\.?[ \t]+$"),
        "greeting_before": re.compile(
            r"(?i:\b(?:hey|hi|hello|heya|yo|thanks|thank you|thx|congrats|congratulations|"
            r"dear|bye|goodbye|morning|evening|night|sorry|wow|oh|welcome back)[ \t,!]*)$"
        ),
        "person_after": re.compile(
            r"^(?:[ \t]+(?:said|says|told|asked|replied|wrote|mentioned|texted|called)\b|"
            r"['’]s[ \t]+(?:mom|dad|mother|father|wife|husband|son|daughter|sister|brother|"
            r"kids|children|friend|boyfriend|girlfriend|partner|birthday|family)\b)"
        ),
        "speaker_after": re.compile(r"^[ \t]*:[ \t]"),
        "next_word": re.compile(r"[ \t]+(\w+)"),  # used with match(text, pos)
    }


def _classify(word: str, shouting: bool) -> _Kind:
    """The kind of one token (possessive already removed)."""
    r = _res()
    low = word.casefold()
    if r["contraction"].search(word):
        return _Kind.BREAK
    if word[0].islower() or word[0].isdigit():
        if low in CONNECTORS:
            return _Kind.CONNECTOR
        if r["camel"].search(word) or r["digit_ident"].match(word) or r["snake"].match(word):
            return _Kind.IDENT
        return _Kind.BREAK
    if low in ALWAYS_SKIP or word in CAPS_SKIP:
        return _Kind.BREAK
    if any(part[:1].islower() and not any(c.isdigit() for c in part)
           for part in word.split("-")[1:]):
        return _Kind.BREAK  # "Self-care", "Well-known": a capitalised compound, not a name
    if low in CONNECTORS or len(word) == 1:
        return _Kind.CONNECTOR  # Title Case "Lord Of The Rings"; initials: "John F Kennedy"
    letters = [c for c in word if c.isalpha()]
    if len(letters) >= 2 and all(c.isupper() for c in letters):
        if shouting:
            return _Kind.BREAK
        return _Kind.IDENT if any(c.isdigit() for c in word) else _Kind.CAPS
    if r["digit_ident"].match(word) or (
        r["camel"].search(word) and not word.startswith(NAME_PREFIXES)
    ):
        return _Kind.IDENT
    return _Kind.NAME


def _tokens(text: str) -> list[_Tok]:
    r = _res()
    raw = [(m.group(), m.start()) for m in r["token"].finditer(text)]
    caps = [w for w, _ in raw if len(w) >= 2 and w.isalpha() and w.isupper()]
    words = [w for w, _ in raw if w.isalpha()]
    # Shouted text makes every word an "acronym": ignore acronyms there.
    shouting = len(caps) >= 3 and len(caps) >= 0.4 * len(words)
    out = []
    for word, start in raw:
        base = r["possessive"].sub("", word) or word
        end = start + len(word)
        # Inside a handle, tag, e-mail address, URL or path: the regex provider's business.
        embedded = (start > 0 and text[start - 1] in "@#/\\.:=?%_~") or (
            end < len(text) and text[end] in "@/\\")
        kind = _Kind.BREAK if embedded else _classify(base, shouting)
        out.append(_Tok(base, start, start + len(base), kind, embedded))
    return out


def _at_sentence_start(text: str, pos: int) -> bool:
    """True when nothing but sentence punctuation, a line break, an opening quote or bracket or
    a bullet precedes ``pos`` (a comma or a word means mid-sentence)."""
    i = pos - 1
    while i >= 0 and text[i] in " \t\"'“‘(*-•>#[":
        i -= 1
    if i < 0:
        return True
    ch = text[i]
    return not (ch.isalnum() or ch in ",&/–—'’")


def _split_runs(text: str, toks: Sequence[_Tok]) -> list[list[_Tok]]:
    """Maximal runs of name-ish tokens separated by blanks (or " & ") on one line."""
    runs: list[list[_Tok]] = []
    cur: list[_Tok] = []
    gap = _res()["gap"]
    for tok in toks:
        if tok.kind is _Kind.BREAK:
            runs.append(cur)
            cur = []
            continue
        if cur and not gap.match(text[cur[-1].end: tok.start]):
            runs.append(cur)
            cur = []
        cur.append(tok)
    runs.append(cur)
    return [r for r in runs if r]


def _trim_edges(run: list[_Tok]) -> list[_Tok]:
    """No run starts or ends with a connector or a (capitalised) function word."""
    def edge(t: _Tok) -> bool:
        return t.kind is _Kind.CONNECTOR or (
            t.kind is _Kind.NAME and t.word.casefold() in FUNCTION)

    while run and edge(run[0]):
        run = run[1:]
    while run and edge(run[-1]):
        run = run[:-1]
    return run


def _strip_starters(run: list[_Tok], lower_seen: frozenset[str]) -> list[_Tok]:
    """Drop the common words a sentence starts with; keep "New York", "Great Britain"."""
    i = 0
    while i < len(run):
        tok, low = run[i], run[i].word.casefold()
        nxt = run[i + 1] if i + 1 < len(run) else None
        if (low in BINDING and nxt is not None and nxt.kind is _Kind.NAME
                and nxt.word.casefold() not in STARTERS):
            break
        if tok.kind is _Kind.NAME and (low in STARTERS or low in lower_seen
                                       or GERUND.match(tok.word)):
            i += 1
            continue
        break
    return run[i:]


def _split_connectors(run: list[_Tok]) -> list[list[_Tok]]:
    """More than two connectors in a row is prose, not "Bank of the West"."""
    parts: list[list[_Tok]] = [[]]
    streak = 0
    for tok in run:
        streak = streak + 1 if tok.kind is _Kind.CONNECTOR else 0
        if streak > 2:
            parts.append([])
            continue
        parts[-1].append(tok)
    return [p for p in parts if p]


def _typed(text: str, run: list[_Tok]) -> tuple[EntityType, float]:
    """Type and confidence of a finished run from the cues around and inside it."""
    r = _res()
    words = [t.word.casefold() for t in run]
    # Cues sit next to the name; a bounded window keeps long texts linear.
    before = text[max(0, run[0].start - CUE_WINDOW): run[0].start]
    after = text[run[-1].end: run[-1].end + CUE_WINDOW]
    names_only = all(t.kind in (_Kind.NAME, _Kind.CONNECTOR) for t in run)
    if names_only and r["title_before"].search(before):
        return EntityType.PERSON, 0.75
    if names_only and len(run) <= 3 and r["speaker_after"].match(after) and (
        _starts_line(text, run[0].start)
    ):
        return EntityType.PERSON, 0.75  # a speaker label: "Caroline: hi!"
    if names_only and len(run) <= 3 and (
        r["greeting_before"].search(before) or r["person_after"].match(after)
    ):
        return EntityType.PERSON, 0.7
    if len(run) > 1 and (words[-1] in ORG_SUFFIX or (
        words[0] in ORG_SUFFIX and any(t.kind is _Kind.CONNECTOR for t in run)
    )):
        return EntityType.ORGANIZATION, 0.65
    if len(run) > 1 and (words[-1] in LOC_SUFFIX or words[0] in LOC_PREFIX):
        return EntityType.LOCATION, 0.65
    if any(t.kind is _Kind.IDENT for t in run):
        return EntityType.PROJECT, 0.55
    if all(t.kind is _Kind.CAPS for t in run):
        return EntityType.OTHER, 0.55
    return EntityType.OTHER, 0.6


def _starts_line(text: str, pos: int) -> bool:
    """Only blanks between the line's start and ``pos``. Walks back over those blanks only: a
    search for the previous line break would rescan a long one-line text for every name."""
    i = pos
    while i > 0 and text[i - 1] in " \t":
        i -= 1
    return i == 0 or text[i - 1] == "\n"


def _title_split(run: list[_Tok]) -> list[_Tok]:
    """"Dr Smith" -> "Smith" (the title itself is a cue, read from the text before)."""
    while run and run[0].word.casefold() in TITLE_WORDS:
        run = run[1:]
    return run


class NamesProvider:
    """Capitalised-name, acronym and identifier heuristics; no dependencies, no model."""

    name = "names"

    def extract(self, text: str) -> list[Mention]:
        toks = _tokens(text)
        lower_seen = frozenset(t.word for t in toks if t.word.islower() and not t.embedded)
        mid_caps = frozenset(
            t.word for t in toks
            if t.kind is _Kind.NAME and not _at_sentence_start(text, t.start)
        )
        found: list[Mention] = []
        for raw in _split_runs(text, toks):
            for part in _split_connectors(raw):
                run = _trim_edges(_title_split(part))
                if run and _at_sentence_start(text, run[0].start):
                    run = _trim_edges(_strip_starters(run, lower_seen))
                mention = self._mention(text, run, mid_caps)
                if mention is not None:
                    found.append(mention)
        found.extend(self._standalone(text, toks))
        return resolve_overlaps(found)

    def _mention(
        self, text: str, run: list[_Tok], mid_caps: frozenset[str]
    ) -> Mention | None:
        if not run or sum(t.kind is not _Kind.CONNECTOR for t in run) > MAX_RUN:
            return None
        etype, confidence = _typed(text, run)
        lone = len(run) == 1 and run[0].kind is _Kind.NAME
        if (lone and etype is EntityType.OTHER and run[0].word not in mid_caps
                and _at_sentence_start(text, run[0].start)):
            nxt = _res()["next_word"].match(text, run[0].end)  # no copy of the rest
            if nxt and nxt.group(1).casefold() in OBJECTS:
                return None  # an imperative: "Mail me", "Tell her"
            if GERUND.match(run[0].word) or DRAWN_OUT.search(run[0].word.casefold()):
                return None
            confidence = 0.45  # a sentence's first word nothing else in the text vouches for
        start, end = run[0].start, run[-1].end
        return Mention(text[start:end], etype, start, end, confidence, self.name)

    def _standalone(self, text: str, toks: Sequence[_Tok]) -> list[Mention]:
        """`backticked` identifiers and dotted file or package names ("node.js")."""
        r = _res()
        out = []
        for m in r["backtick"].finditer(text):
            if any(c.isalpha() for c in m.group(1)):
                out.append(Mention(m.group(1), EntityType.PROJECT, m.start(1), m.end(1), 0.6,
                                   self.name))
        for t in toks:
            dotted = None if t.embedded else r["dotted"].match(t.word)
            if dotted:
                etype = EntityType.URL if dotted.group(1) in TLDS else EntityType.PROJECT
                out.append(Mention(t.word, etype, t.start, t.end, 0.45, self.name))
        return out
