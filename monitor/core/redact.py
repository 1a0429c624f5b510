"""Keeping secrets out of messages: the one way to show a URL in an error or a log line.

URLs are where secrets hide in this project: ``user:password@`` in a Prometheus or Alertmanager URL, a token in a
query string, and the whole path of a webhook (``https://hooks.example/services/T0/B0/<token>``). So:

    redact_url(url)       scheme://host[:port]/path with the userinfo, query and fragment dropped; for the URLs
                          whose path is ours to know (Prometheus, Alertmanager, Jolokia) in errors and logs
    target_id(url)        scheme://host[:port]/...#<8 hex>: a webhook named by its host and a hash of the whole URL,
                          stable across runs, so two webhooks on one host stay apart and an operator can find which
                          one it is (``printf %s URL | sha256sum | cut -c1-8``); the path itself never appears
    has_credentials(url)  whether a URL carries ``user[:password]@``: config validation refuses those
    scrub(text, *urls)    ``text`` with each given URL (whole, path, query) replaced by its target id: for text a
                          remote server wrote (an error body may echo the URL it was called with)
    redact_secrets_in(t)  ``t`` with URLs redacted, the secret part of API tokens (``kh_<id>_...``), bearer
                          credentials and ``password=``/``secret:``-style values masked
    RedactingFilter       a logging filter that applies ``redact_secrets_in`` to every record: the last line of
                          defence, installed on the CLI's log handler (text and JSON lines alike)

None of these raises on a malformed URL: an error path must not fail while describing the error.
"""

from __future__ import annotations

import hashlib
import logging
import re
from urllib.parse import urlsplit

_UNPARSEABLE = "<unparseable URL>"
# A URL inside free text: scheme://, then everything up to whitespace or a quote/bracket that ends it in prose.
_URL_IN_TEXT = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")


_USERINFO = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#]*@")


def _host_port(netloc: str) -> str:
    return netloc.rpartition("@")[2]  # the last '@' ends the userinfo (an '@' in a password must be escaped)


def has_credentials(url: str) -> bool:
    """True if ``url`` carries ``user@`` or ``user:password@`` before its host."""
    return bool(_USERINFO.match(str(url)))


def redact_url(url: str) -> str:
    """``url`` without userinfo, query string and fragment (``?...`` marks a dropped query)."""
    try:
        parts = urlsplit(str(url))
    except ValueError:
        return _UNPARSEABLE
    if not parts.scheme or not parts.netloc:
        return _UNPARSEABLE if ("@" in str(url) or "?" in str(url)) else str(url)
    out = f"{parts.scheme}://{_host_port(parts.netloc)}{parts.path}"
    return out + ("?..." if parts.query else "")


def target_id(url: str) -> str:
    """A webhook (or any URL whose path is a secret) as ``scheme://host[:port]/...#<8 hex of sha256(url)>``."""
    digest = hashlib.sha256(str(url).encode()).hexdigest()[:8]
    try:
        parts = urlsplit(str(url))
    except ValueError:
        return f"{_UNPARSEABLE}#{digest}"
    if not parts.scheme or not parts.netloc:
        return f"{_UNPARSEABLE}#{digest}"
    return f"{parts.scheme}://{_host_port(parts.netloc)}/...#{digest}"


def scrub(text: str, *urls: str) -> str:
    """``text`` with every given URL, and its path and query alone, replaced by the URL's ``target_id``."""
    for url in urls:
        if not url:
            continue
        tid = target_id(url)
        pieces = [str(url)]
        try:
            parts = urlsplit(str(url))
            pieces += [parts.path + (f"?{parts.query}" if parts.query else ""), parts.query, parts.path]
            if parts.netloc and "@" in parts.netloc:
                pieces.append(parts.netloc.rpartition("@")[0])
        except ValueError:
            pass
        for piece in sorted({p for p in pieces if p and p != "/"}, key=len, reverse=True):
            text = text.replace(piece, tid)
    return text


def redact_urls_in(text: str) -> str:
    """Every URL in free text through ``redact_url``."""
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)


# An API token's secret part (monitor/api/tokens.py: kh_<12 hex id>_<secret>); the id is public and stays.
_API_TOKEN = re.compile(r"\b(kh_[0-9a-f]{12}_)[A-Za-z0-9_-]+")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[^\s'\"]+")
# key=value or key: value where the key says it holds a secret (sasl.password=..., "client_secret": "...")
_SECRET_VALUE = re.compile(
    r"(?i)\b([\w.-]*(?:password|passwd|secret|passphrase|api[_-]?key|jaas\.config)['\"]?\s*[=:]\s*)(['\"]?)[^\s'\",;}]+"
)
MASK = "***"


def redact_secrets_in(text: str) -> str:
    """``redact_urls_in``, then every API token's secret, bearer credential and secret-named value masked."""
    text = redact_urls_in(text)
    text = _API_TOKEN.sub(lambda m: m.group(1) + MASK, text)
    text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
    return _SECRET_VALUE.sub(lambda m: m.group(1) + m.group(2) + MASK, text)


class RedactingFilter(logging.Filter):
    """Rewrites each record's message (and traceback) with ``redact_secrets_in``. Attach it to a handler, not a
    logger: a logger's filters miss the records its children propagate."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record is logging's to report, not ours
            return True
        redacted = redact_secrets_in(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info:  # also when a handler before this one has already cached the traceback unredacted
            record.exc_text = redact_secrets_in(record.exc_text or logging.Formatter().formatException(record.exc_info))
        return True
