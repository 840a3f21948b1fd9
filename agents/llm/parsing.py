"""Reading a model's reply: the one action it takes, and its final edge list.

Actions: a native tool call comes first; without one, the reply's text is searched for a JSON
action (a fenced block or a bare object, prose around it allowed), then for the ReAct form
``Action: NAME`` / ``Action Input: {...}``, then for a call written as ``name(x="X1", ...)``.
Nothing found: the text itself is the action, so the environment answers with an error
observation (which costs a step, as every rejected action does).

Edge lists are read tolerantly — ``X1 -> X2``, ``X1 → X2``, ``X1 - X2``, ``X1 --- X2``,
``X2 <- X1``, chains ``X1 -> X2 -> X3``, bulleted or numbered lines, comma-separated lists,
JSON arrays of strings, pairs or ``{"from", "to"}`` objects — and strictly where it matters:
an unknown variable, a self-loop or two different edges on one pair is refused with a message
that says what to fix (:class:`EdgeListError`).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agents.llm.messages import ChatReply, ToolCall
from heuresis_env.errors import HeuresisError

#: where an extracted action came from
ACTION_SOURCES = ("tool_call", "text_json", "text_react", "text_call", "unparsed")
#: the most '{' / '[' positions tried when scanning text for JSON (bounds the work on odd input)
MAX_JSON_STARTS = 400

_THINK_BLOCK = re.compile(r"<(think|thinking|reasoning)>(.*?)</\1>", re.S | re.I)
_THINK_OPEN = re.compile(r"^\s*<(think|thinking|reasoning)>(.*)$", re.S | re.I)


def split_reasoning(text: str) -> tuple[str, str]:
    """Split ``<think>…</think>`` reasoning (as some open models emit it) from the answer text.

    An unclosed tag at the start (the model ran out of tokens while thinking) makes the whole
    text reasoning.
    """
    if not text:
        return "", ""
    parts = [match.group(2).strip() for match in _THINK_BLOCK.finditer(text)]
    rest = _THINK_BLOCK.sub("", text)
    unclosed = _THINK_OPEN.match(rest)
    if unclosed:
        parts.append(unclosed.group(2).strip())
        rest = ""
    return rest.strip(), "\n".join(p for p in parts if p)


# ---- actions ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class ExtractedAction:
    """The action read from a reply, where it came from, and what was left out.

    ``action`` is what goes to ``env.step`` (a dict, or the raw text when nothing could be
    read); ``tool_call_id`` names the native call it came from; ``ignored_tool_calls`` are the
    ids of further calls in the same reply, which are not run (one action per turn).
    """

    action: dict[str, Any] | str
    source: str
    tool_call_id: str | None = None
    ignored_tool_calls: tuple[str, ...] = ()
    note: str | None = None


def tool_call_action(call: ToolCall) -> dict[str, Any] | str:
    """A native tool call as an action; malformed arguments stay malformed (as a JSON text the
    environment will refuse with the parser's message), so the model learns what went wrong."""
    text = (call.arguments or "").strip()
    if not text or text == "null":
        return {"tool": call.name, "args": {}}
    try:
        arguments = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return '{"tool": ' + json.dumps(call.name) + ', "args": ' + text + "}"
    if isinstance(arguments, dict):
        return {"tool": call.name, "args": arguments}
    return {"tool": call.name, "args": arguments}  # not an object: the env says args must be one


_TOOL_KEYS = ("tool", "tool_name", "action", "name")
_ARGUMENT_KEYS = ("args", "arguments", "action_input", "parameters", "input", "tool_input")


def normalize_action(candidate: Any) -> dict[str, Any] | None:
    """A decoded JSON value as ``{"tool": NAME, "args": ...}``, or None when it is no action.

    Accepts ``{"tool", "args"}``, ``{"name", "arguments"}`` (function-call style),
    ``{"action", "action_input"}`` (ReAct JSON), ``{"function": {...}}`` and a flat
    ``{"tool": NAME, x: ..., y: ...}`` whose other keys are the arguments.
    """
    if not isinstance(candidate, dict):
        return None
    function = candidate.get("function")
    if isinstance(function, dict) and isinstance(function.get("name"), str):
        return normalize_action(function)
    key = next((k for k in _TOOL_KEYS if isinstance(candidate.get(k), str)), None)
    if key is None:
        return None
    name = candidate[key].strip()
    argument_key = next((k for k in _ARGUMENT_KEYS if k in candidate), None)
    if key == "name" and argument_key is None:
        return None  # {"name": ...} alone is more likely an argument object than an action
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,63}", name):
        return None
    if argument_key is None:
        ignored = {key, "thought", "thoughts", "reasoning", "reason", "explanation", "type"}
        args: Any = {k: v for k, v in candidate.items() if k not in ignored}
    else:
        args = candidate[argument_key]
        if isinstance(args, str):
            stripped = args.strip()
            if not stripped or stripped.lower() in ("none", "null", "{}"):
                args = {}
            else:
                try:
                    args = json.loads(stripped)
                except (json.JSONDecodeError, RecursionError):
                    pass  # left as text: the environment says args must be an object
        elif args is None:
            args = {}
    return {"tool": name, "args": args}


def _json_values(text: str, openers: str = "{") -> Iterator[tuple[int, int, Any]]:
    """JSON values (objects, or also arrays) found in text, outermost first, in text order.

    Tries ``json`` at each opening bracket; Python literals (single quotes, True/None) are
    accepted through ``ast.literal_eval`` of the balanced span.
    """
    decoder = json.JSONDecoder()
    position, tried = 0, 0
    while tried < MAX_JSON_STARTS:
        starts = [i for i in (text.find(c, position) for c in openers) if i >= 0]
        if not starts:
            return
        start = min(starts)
        tried += 1
        try:
            value, end = decoder.raw_decode(text, start)
        except (json.JSONDecodeError, RecursionError):
            # a Python literal ({'tool': ...}) is the only other form worth the scan
            end = (_balanced_end(text, start, limit=5000) if "'" in text[start:start + 200]
                   else None)
            value = None
            if end is not None:
                try:
                    value = ast.literal_eval(text[start:end])
                except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                    value = None
            if value is None:
                position = start + 1
                continue
        yield start, end, value
        position = end


def _balanced_end(text: str, start: int, limit: int = 20_000) -> int | None:
    """The end of the bracketed span opening at ``start`` (quotes respected), or None."""
    pairs = {"{": "}", "[": "]", "(": ")"}
    stack: list[str] = []
    quote: str | None = None
    escaped = False
    for index in range(start, min(len(text), start + limit)):
        char = text[index]
        if quote is not None:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = None
            continue
        if char in "\"'":
            quote = char
        elif char in pairs:
            stack.append(pairs[char])
        elif char in ")]}":
            if not stack or stack.pop() != char:
                return None
            if not stack:
                return index + 1
    return None


_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n?(.*?)```", re.S)


def _fenced_blocks(text: str) -> list[str]:
    return [match.group(2) for match in _FENCE.finditer(text)]


def find_json_action(text: str) -> tuple[dict[str, Any] | None, int]:
    """The first JSON action in text (fenced blocks first), and how many actions were found."""
    found: list[dict[str, Any]] = []
    for region in [*_fenced_blocks(text), text]:
        for _, _, value in _json_values(region):
            action = normalize_action(value)
            if action is not None:
                found.append(action)
        if found:
            break
    return (found[0] if found else None), len(found)


def _whole_json(text: str) -> tuple[bool, Any]:
    """Whether the reply is one JSON value and nothing else (inside one ``` fence at most)."""
    stripped = text.strip()
    fenced = _FENCE.fullmatch(stripped)
    if fenced is not None:
        stripped = fenced.group(2).strip()
    try:
        return True, json.loads(stripped)
    except (json.JSONDecodeError, ValueError):
        return False, None


def strict_action(reply: ChatReply) -> ExtractedAction:
    """The strict reader (the ``parse="strict"`` wrapper): a native tool call, or a reply that
    is one JSON action and nothing else; anything else is passed on unparsed."""
    if reply.tool_calls:
        return extract_action(reply)
    text = reply.text or ""
    whole, value = _whole_json(text)
    action = normalize_action(value) if whole else None
    if action is not None:
        return ExtractedAction(action, "text_json")
    return ExtractedAction(text.strip(), "unparsed",
                           note="the reply is not one JSON action (strict reading)")


def strict_edge_list(text: str) -> Any:
    """The strict reading of a final answer: the reply must be one JSON edge structure (a
    list, or ``{"edges": [...]}``), returned decoded for :func:`parse_edge_list`."""
    whole, value = _whole_json(text)
    if not whole or not isinstance(value, list | dict):
        raise EdgeListError("the reply is not one JSON edge list (strict reading): reply "
                            'with a JSON list such as ["X1 --> X2"] and nothing else')
    return value


def action_schema(tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The JSON schema of one action ``{"tool": NAME, "args": {...}}`` over the offered tools
    (OpenAI-style function schemas): one alternative per tool, with its own arguments."""
    options = []
    for tool in tools:
        function = tool.get("function", tool)
        parameters = dict(function.get("parameters") or {"type": "object", "properties": {}})
        options.append({"type": "object", "properties": {
            "tool": {"const": function["name"]}, "args": parameters},
            "required": ["tool", "args"], "additionalProperties": False})
    return {"anyOf": options} if len(options) > 1 else options[0]


def edge_list_schema(names: Sequence[str], directed_only: bool = False) -> dict[str, Any]:
    """The JSON schema of a final answer ``{"edges": ["X1 --> X2", ...]}`` over ``names``."""
    alternatives = "|".join(_escape(n) for n in names)
    arrows = "-->" if directed_only else "(-->|---)"
    return {"type": "object", "properties": {"edges": {"type": "array", "items": {
        "type": "string", "pattern": f"^({alternatives}) {arrows} ({alternatives})$"}}},
        "required": ["edges"], "additionalProperties": False}


def _escape(name: str) -> str:
    return "".join("\\" + c if not (c.isalnum() or c == "_") else c for c in name)


_REACT = re.compile(r"Action\s*:\s*[`\"']?([A-Za-z_][A-Za-z0-9_]*)[`\"']?[ \t]*\n+\s*"
                    r"Action\s*Input\s*:\s*(.*)", re.S | re.I)


def _react_action(text: str) -> dict[str, Any] | None:
    match = _REACT.search(text)
    if match is None:
        return None
    name, rest = match.group(1), match.group(2).strip()
    if not rest or rest.lower().startswith(("none", "null", "{}")):
        return {"tool": name, "args": {}}
    for _, _, value in _json_values(rest):
        return {"tool": name, "args": value}
    return {"tool": name, "args": rest.splitlines()[0].strip()}


def _call_action(text: str, tool_names: Sequence[str]) -> dict[str, Any] | None:
    """``name(x="X1", given=["X3"])`` written as Python, for a known tool name."""
    if not tool_names:
        return None
    pattern = re.compile(r"(?<![\w.])(" + "|".join(re.escape(n) for n in tool_names) + r")\(")
    for match in pattern.finditer(text):
        end = _balanced_end(text, match.end() - 1)
        if end is None:
            continue
        try:
            node = ast.parse(text[match.start():end], mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        if not isinstance(node, ast.Call) or node.args:
            continue
        try:
            args = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg}
        except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
            continue
        if len(args) != len(node.keywords):
            continue
        return {"tool": match.group(1), "args": args}
    return None


def extract_action(reply: ChatReply, tool_names: Sequence[str] = ()) -> ExtractedAction:
    """The one action of a reply: its first native tool call, else an action in its text."""
    if reply.tool_calls:
        first, *others = reply.tool_calls
        note = None
        if others:
            note = (f"{len(others)} further tool call(s) not run: "
                    f"{', '.join(c.name for c in others)} (one action per turn)")
        return ExtractedAction(tool_call_action(first), "tool_call", first.id,
                               tuple(c.id for c in others), note)
    text = reply.text or ""
    action, count = find_json_action(text)
    if action is not None:
        note = f"{count - 1} further action(s) in the text not run" if count > 1 else None
        return ExtractedAction(action, "text_json", note=note)
    action = _react_action(text)
    if action is not None:
        return ExtractedAction(action, "text_react")
    action = _call_action(text, tool_names)
    if action is not None:
        return ExtractedAction(action, "text_call")
    return ExtractedAction(text.strip(), "unparsed",
                           note="no action found in the reply; the text is passed on as is")


# ---- edge lists -------------------------------------------------------------------------------

class EdgeListError(HeuresisError):
    """An edge list that cannot be accepted; the message says what to fix."""


_UNICODE_ARROWS = {
    "→": "-->", "⟶": "-->", "⇒": "-->", "➔": "-->", "➜": "-->", "➝": "-->", "➞": "-->",
    "↦": "-->", "⟹": "-->", "←": "<--", "⟵": "<--", "⇐": "<--", "⟸": "<--",
    "↔": "<->", "⟷": "<->", "⇔": "<->", "⟺": "<->",
    "—": "-", "–": "-", "―": "-", "−": "-", "‐": "-", "‑": "-", "‒": "-",
    "“": '"', "”": '"', "‘": "'", "’": "'",
}
_UNICODE_TABLE = str.maketrans(_UNICODE_ARROWS)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: a token that looks like a variable name even when it is not one of the instance's names
_VARIABLE_LIKE = re.compile(r"[A-Za-z]{1,3}_?\d{1,4}")
_ARROW = re.compile(r"\s*(o-+o|o-+>|<-+o|<-+>|<=+>|-+>|=+>|<-+|<=+|-+)\s*")
_SEPARATOR = re.compile(r"""\s*['"`]*\s*(?:,|;|\||\band\b)\s*['"`]*\s*""", re.I)
_BULLET = re.compile(r"^\s*(?:[-*•+>]+|\(?\d{1,3}[.):]|\(?[a-zA-Z][.)])\s+")
_LABEL = re.compile(r"^[A-Za-z][A-Za-z0-9 _-]{0,40}:\s*")
_LEADING = re.compile(r"""^[\s\[\](){}'"`]*""")
_WORD_ARROWS = ((re.compile(r"\s+is\s+(?:a\s+)?(?:direct\s+)?caused\s+by\s+", re.I), " <-- "),
                (re.compile(r"\s+(?:directly\s+)?causes\s+", re.I), " --> "))
_MARKER = re.compile(r"^.*\b(final\s+(?:edge\s*list|edges|graph|answer)|edge\s*list|edges|"
                     r"answer)\b[^:\n]*:", re.I | re.M)
_EMPTY_WORDS = {"[]", "{}", "()", "none", "no edges", "empty", "empty graph", "empty list",
                "(none)", "the empty graph", "no edge", "nil", "null", "n/a"}


def _canonical_symbol(arrow: str) -> tuple[str, bool]:
    """(symbol for the environment, whether the endpoints swap) for an arrow as written."""
    if re.fullmatch(r"o-+o", arrow):
        return "o-o", False
    if re.fullmatch(r"o-+>", arrow):
        return "o->", False
    if re.fullmatch(r"<-+o", arrow):
        return "o->", True
    if re.fullmatch(r"<-+>|<=+>", arrow):
        return "<->", False
    if re.fullmatch(r"-+>|=+>", arrow):
        return "-->", False
    if re.fullmatch(r"<-+|<=+", arrow):
        return "-->", True
    return "---", False


def _normalize_text(text: str) -> str:
    text = text.translate(_UNICODE_TABLE)
    for pattern, replacement in _WORD_ARROWS:
        text = pattern.sub(replacement, text)
    return text


class _EdgeCollector:
    """Accumulates edges in order, resolving names and finding every problem at once."""

    def __init__(self, names: Sequence[str]):
        self.names = list(names)
        self.exact = set(self.names)
        lower: dict[str, list[str]] = {}
        for name in self.names:
            lower.setdefault(name.lower(), []).append(name)
        self.lower = {k: v[0] for k, v in lower.items() if len(v) == 1}
        self.edges: dict[frozenset[str], tuple[str, str, str]] = {}
        self.order: list[frozenset[str]] = []
        self.unknown: list[str] = []
        self.problems: list[str] = []
        #: whether some edge had an endpoint that is a known or variable-like name
        self.touched_names = False

    def resolve(self, token: str) -> str | None:
        """The instance's name for a token, or None when it is no known name."""
        if token in self.exact:
            return token
        return self.lower.get(token.lower())

    def classify(self, token: str) -> str:
        if self.resolve(token) is not None:
            return "known"
        return "variable" if _VARIABLE_LIKE.fullmatch(token) else "word"

    def add(self, left: str, symbol: str, right: str, swap: bool, written: str) -> None:
        u, v = (right, left) if swap else (left, right)
        resolved = [self.resolve(u), self.resolve(v)]
        if any(r is not None or _VARIABLE_LIKE.fullmatch(t) for r, t in zip(resolved, (u, v))):
            self.touched_names = True
        for token, name in ((u, resolved[0]), (v, resolved[1])):
            if name is None and token not in self.unknown:
                self.unknown.append(token)
        if None in resolved:
            return
        u, v = resolved
        if u == v:
            self.problems.append(f"{written!r} is a self-loop (an edge joins two different "
                                 "variables)")
            return
        if symbol in ("---", "<->", "o-o") and self.names.index(u) > self.names.index(v):
            u, v = v, u  # symmetric edges in name order, so duplicates compare equal
        pair = frozenset((u, v))
        edge = (u, symbol, v)
        if pair in self.edges:
            if self.edges[pair] != edge:
                self.problems.append(f"two different edges join {u} and {v}: "
                                     f"{' '.join(self.edges[pair])!r} and {' '.join(edge)!r}; "
                                     "give each pair once")
            return
        self.edges[pair] = edge
        self.order.append(pair)

    def check(self) -> None:
        problems = list(self.problems)
        if self.unknown:
            problems.insert(0, f"unknown variable name(s) {', '.join(self.unknown)}; the "
                               f"variables are {', '.join(self.names)}")
        if problems:
            raise EdgeListError("; ".join(problems))

    def result(self) -> list[str]:
        self.check()
        return [" ".join(self.edges[pair]) for pair in self.order]


def _read_chain(text: str, collector: _EdgeCollector, *, strict: bool = False) -> int:
    """Read ``NAME ARROW NAME (ARROW NAME)*`` at the start of ``text``; returns the characters
    used (0: no edge there). Unless ``strict``, a chain neither starts nor continues with an
    ordinary word (not a known or variable-like name), so prose is no edge and a comment such
    as ``X1 -> X2 - strong dependence`` keeps only its edge; ``strict`` reads every word as a
    name (then refused as unknown), for items meant as edges."""
    match = _NAME.match(text)
    if match is None:
        return 0
    left, position = match.group(0), match.end()
    if not strict and collector.classify(left) == "word":
        return 0
    used = 0
    while True:
        arrow = _ARROW.match(text, position)
        if arrow is None:
            break
        node = _NAME.match(text, arrow.end())
        if node is None or (not strict and collector.classify(node.group(0)) == "word"):
            break
        symbol, swap = _canonical_symbol(arrow.group(1))
        collector.add(left, symbol, node.group(0), swap,
                      f"{left} {arrow.group(1)} {node.group(0)}")
        left, position = node.group(0), node.end()
        used = position
    return used


def _edge_count(collector: _EdgeCollector) -> int:
    return len(collector.order) + len(collector.unknown) + len(collector.problems)


def _read_line(line: str, collector: _EdgeCollector, *, strict: bool = False) -> int:
    """Edges of one line that starts with an edge (after a bullet, number or label), chains
    separated by commas, semicolons or "and"; returns how many edges (or problems) it gave.
    A line starting with prose is skipped; ``strict`` reads a first word as a name too (for
    the strings of a JSON edge list, where every item is meant as an edge)."""
    line = _BULLET.sub("", line, count=1)
    line = _LEADING.sub("", line)
    before = _edge_count(collector)
    used = _read_chain(line, collector, strict=strict)
    if not used and not strict:
        label = _LABEL.match(line)
        if label is None:
            return 0
        line = _LEADING.sub("", line[label.end():])
        used = _read_chain(line, collector)
    while used:
        separator = _SEPARATOR.match(line, used)
        if separator is None:
            break
        rest = line[separator.end():]
        more = _read_chain(rest, collector, strict=strict)
        if not more:
            break
        line, used = rest, more
    return _edge_count(collector) - before


def _read_text_region(text: str, collector: _EdgeCollector) -> int:
    return sum(_read_line(line, collector) for line in text.splitlines())


def _is_explicitly_empty(text: str) -> bool:
    cleaned = re.sub(r"[`*_.!]", "", text).strip().lower()
    cleaned = re.sub(r"^(final\s+)?(edge\s*list|edges|graph|answer)\s*:\s*", "", cleaned)
    return cleaned.strip() in _EMPTY_WORDS


_EDGE_KEYS = ("edges", "final_edges", "edge_list", "graph", "final_graph")
_FROM_KEYS = ("from", "source", "cause", "parent", "u", "head", "src")
_TO_KEYS = ("to", "target", "effect", "child", "v", "tail", "dst")


def _read_structure(value: Any, collector: _EdgeCollector, depth: int = 0) -> bool:
    """Edges from a decoded JSON value; False when it is no edge structure at all."""
    if depth > 4:
        return False
    if isinstance(value, Mapping):
        for key in _EDGE_KEYS:
            if key in value:
                return _read_structure(value[key], collector, depth + 1)
        edge = _edge_from_mapping(value)
        if edge is None:
            return False
        _read_structure([edge], collector, depth + 1)
        return True
    if not isinstance(value, list | tuple):
        return False
    if not value:
        return True
    for item in value:
        if isinstance(item, str):
            if not _read_line(_normalize_text(item), collector, strict=True):
                collector.problems.append(f"cannot read the edge {item!r}; write it as "
                                          "'X1 --> X2' or 'X1 --- X2'")
        elif isinstance(item, list | tuple) and len(item) in (2, 3) \
                and all(isinstance(x, str) for x in item):
            if len(item) == 2:
                collector.add(item[0].strip(), "-->", item[1].strip(), False,
                              f"{item[0]} --> {item[1]}")
            else:
                arrow = _normalize_text(item[1]).strip()
                if not _ARROW.fullmatch(arrow):
                    collector.problems.append(f"cannot read the edge {list(item)!r}")
                    continue
                symbol, swap = _canonical_symbol(arrow)
                collector.add(item[0].strip(), symbol, item[2].strip(), swap,
                              " ".join(item))
        elif isinstance(item, Mapping):
            edge = _edge_from_mapping(item)
            if edge is None:
                collector.problems.append(f"cannot read the edge {dict(item)!r}; give "
                                          "{'from': 'X1', 'to': 'X2'} or 'X1 --> X2'")
            else:
                _read_structure([edge], collector, depth + 1)
        else:
            collector.problems.append(f"cannot read the edge {item!r}")
    return True


def _looks_like_edges(value: Any, names: Sequence[str]) -> bool:
    """Whether a decoded list is meant as an edge list (one item reads as an edge), so that
    other JSON in a reply — numbers, conditioning sets — is not taken for one."""
    if not isinstance(value, list | tuple):
        return False
    probe = _EdgeCollector(names)
    for item in value:
        if isinstance(item, str) and _read_line(_normalize_text(item), probe, strict=True) \
                and probe.touched_names:
            return True
        if isinstance(item, list | tuple) and len(item) in (2, 3) \
                and all(isinstance(x, str) for x in item) \
                and all(probe.classify(x.strip()) != "word" for x in (item[0], item[-1])):
            return True
        if isinstance(item, Mapping) and _edge_from_mapping(item) is not None:
            return True
    return False


def _edge_from_mapping(item: Mapping[str, Any]) -> str | list[str] | None:
    u = next((item[k] for k in _FROM_KEYS if isinstance(item.get(k), str)), None)
    v = next((item[k] for k in _TO_KEYS if isinstance(item.get(k), str)), None)
    if u is None or v is None:
        return None
    kind = str(item.get("type", item.get("kind", ""))).lower()
    undirected = item.get("directed") is False or kind in ("undirected", "---", "--", "-")
    return [u, "---" if undirected else "-->", v]


def _structured_candidates(text: str) -> Iterator[Any]:
    """JSON (or Python-literal) arrays and objects in text: fenced blocks first."""
    for block in _fenced_blocks(text):
        for _, _, value in _json_values(block, "[{"):
            yield value
    for _, _, value in _json_values(text, "[{"):
        yield value


def parse_edge_list(source: str | Sequence[Any] | Mapping[str, Any],
                    names: Sequence[str]) -> list[str]:
    """Read a final edge list into the environment's edge strings (``"X1 --> X2"``,
    ``"X1 --- X2"``, ``"X1 <-> X2"``, ``"X1 o-> X2"``, ``"X1 o-o X2"``).

    ``source`` is the model's text, or an already decoded list/dict (a tool call's
    ``edges``). In text, the first readable JSON edge structure wins; else the lines after the
    last "Final edge list:"-style marker; else every line of the text that starts with an
    edge. Raises :class:`EdgeListError` (unknown names, self-loops, conflicting edges on one
    pair, no list found); an explicitly empty answer (``[]``, "none", "no edges") is [].
    """
    if not names:
        raise EdgeListError("no variable names to read an edge list against")
    if not isinstance(source, str):
        collector = _EdgeCollector(names)
        if isinstance(source, Mapping | list | tuple) and _read_structure(source, collector):
            return collector.result()
        raise EdgeListError(f"cannot read an edge list from a {type(source).__name__}; give a "
                            "list of edges such as ['X1 --> X2', 'X3 --- X4']")
    text = _normalize_text(source)
    if _is_explicitly_empty(text):
        return []
    for value in _structured_candidates(text):
        if isinstance(value, Mapping):
            action = normalize_action(value)
            if action is not None:
                if not (isinstance(action["args"], Mapping) and "edges" in action["args"]):
                    continue  # some other action, not an edge list
                value = action["args"]
            elif not any(k in value for k in _EDGE_KEYS) and _edge_from_mapping(value) is None:
                continue
        elif not _looks_like_edges(value, names):
            continue
        collector = _EdgeCollector(names)
        _read_structure(value, collector)
        return collector.result()
    regions = []
    markers = list(_MARKER.finditer(text))
    if markers:
        regions.append(text[markers[-1].end():])
    fences = _fenced_blocks(text)
    if fences:
        regions.append(fences[-1])
    regions.append(text)
    for region in regions:
        if _is_explicitly_empty(region):
            return []
        collector = _EdgeCollector(names)
        if _read_text_region(region, collector):
            return collector.result()
    raise EdgeListError("no edge list found; write one edge per line, such as 'X1 --> X2' "
                        "(directed) or 'X1 --- X2' (undirected), or [] for no edges")
