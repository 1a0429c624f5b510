"""What a PromQL expression reads: metric names, and Grafana's variables substituted for running it outside Grafana.

Pure functions, used by the tests that prove the dashboards and the recording rules against the collectors' catalog
and a live Prometheus. The metric-name scanner is a small tokenizer, not a full parser: it is exact for the
expressions this project writes (selectors, aggregations with ``by``/``without``, functions, binary operators with
``on``/``ignoring``/``group_left``), and a test pins it on those shapes.
"""

from __future__ import annotations

import re

# Words that can stand where a metric name could, but are not one.
_KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
    "inf",
    "nan",
    "atan2",
}
_GROUPING = {"by", "without", "on", "ignoring", "group_left", "group_right"}
_TOKEN = re.compile(
    r'(?P<str>"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`)'
    r"|(?P<brace>\{[^}]*\})"
    r"|(?P<range>\[[^\]]*\])"
    r"|(?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)"
    r"|(?P<num>\d[\w.]*)"  # numbers and durations (5m, 1h30m)
    r"|(?P<open>\()"
    r"|(?P<other>[^\sA-Za-z_:(\"'`{\[]+)"
    r"|\s+"
)
_NAME_MATCHER = re.compile(r'__name__\s*=\s*"([^"]+)"')


def metric_names(expr: str) -> set[str]:
    """Every metric a PromQL expression selects (``foo``, ``foo{...}``, ``{__name__="foo"}``)."""
    names: set[str] = set()
    tokens = [(m.lastgroup, m.group()) for m in _TOKEN.finditer(expr) if m.lastgroup]
    skip_group = False  # inside by (...), on (...): label names, not metrics
    depth_at_group = -1
    depth = 0
    for i, (kind, text) in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else (None, "")
        if kind == "open":
            depth += 1
            continue
        if kind == "other" and ")" in text:
            depth -= text.count(")")
            if skip_group and depth <= depth_at_group:
                skip_group = False
            continue
        if kind == "brace":
            names.update(_NAME_MATCHER.findall(text))
            continue
        if kind != "ident" or skip_group:
            continue
        if text in _GROUPING:
            if nxt[0] == "open":
                skip_group, depth_at_group = True, depth
            continue
        if text.lower() in _KEYWORDS or nxt[0] == "open" or (nxt[0] == "ident" and nxt[1] in _GROUPING):
            continue  # a function call, an aggregation (sum by (...) (...)), or an operator word
        names.add(text)
    return names


def substitute(expr: str, variables: dict[str, str]) -> str:
    """Replace Grafana's ``$var`` / ``${var}`` / ``[[var]]`` with values, longest names first (``$__rate_interval``
    before ``$__rate``). An unknown variable is left as is, so the query fails loudly in Prometheus."""
    out = expr
    for name in sorted(variables, key=len, reverse=True):
        value = variables[name]
        out = out.replace("${" + name + "}", value).replace("[[" + name + "]]", value)
        out = re.sub(r"\$" + re.escape(name) + r"(?![A-Za-z0-9_])", lambda _m: value, out)
    return out
