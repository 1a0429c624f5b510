"""The kcat line a secured stack prints (``stack up|status``, the demo's first screen), and the librdkafka it runs on.

Why the plain ``kcat -F FILE -L`` fails on Kafka 4 with Debian's kcat (1.7.1, linked to librdkafka 2.0.2), for
every principal, with "invalid credentials": librdkafka before 2.6.1 repeats its client nonce in SCRAM's
client-final-message (``r=<client nonce><client nonce + server nonce>`` instead of ``r=<client nonce + server
nonce>``; confluentinc/librdkafka#4895, present since 0.0.99). Brokers 3.8.1 to 3.9.x check that nonce with
``endsWith`` (CVE-2024-56128's fix, lenient for this very client); from 4.0 ``ScramSaslServer`` compares it with
``equals``, as RFC 5802 asks, and fails the exchange before looking at the proof. Measured on the stack's 4.4.0:
server-first-message 157 bytes (a 57-character nonce, 88 of salt), kcat's client-final 189 bytes where a correct one
is 157: the 32-character client nonce twice. Salt size, iteration count and password characters change nothing
(salts of 30, 32 and 64 bytes, 4096 and 8192 iterations, password ``abcdefgh``: all refused), so no credential the
stack could make lets that kcat in; a broker that accepted it would undo the CVE fix.

kcat calls only librdkafka's C API, whose ABI is stable within ``librdkafka.so.1``; so where the installed kcat's
librdkafka is too old for the brokers, the printed line runs that same kcat on the librdkafka this process has loaded
(confluent-kafka's, 2.16 here): ``LD_LIBRARY_PATH=<stack dir>/clients/librdkafka kcat -F FILE -L``, the directory
holding a symbolic link ``librdkafka.so.1`` to it. The decision (``kcat_line``) is pure; ``printed_kcat_line`` gathers
the facts and makes the link.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from monitor.stack.layout import StackLayout

Version = tuple[int, int, int]

# The first librdkafka whose SCRAM client-final-message carries the nonce once (librdkafka#4895).
SCRAM_NONCE_FIXED: Version = (2, 6, 1)
# The first Kafka whose brokers compare that nonce strictly (3.8.1-3.9.x accept the repeated one).
STRICT_NONCE_KAFKA: Version = (4, 0, 0)
LIB_NAME = "librdkafka.so.1"
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def parse_version(text: str) -> Version | None:
    m = _VERSION.search(text)
    return (int(m[1]), int(m[2]), int(m[3])) if m else None


def show(v: Version) -> str:
    return ".".join(map(str, v))


@dataclass(frozen=True)
class Librdkafka:
    """A librdkafka: its version and, for the one this process loaded, its file."""

    version: Version
    path: Path | None = None


@dataclass(frozen=True)
class KcatLine:
    """The shell line to print, and (when it is not the plain one) why, in one sentence for the console."""

    command: str
    note: str = ""
    lib_dir: Path | None = None  # LD_LIBRARY_PATH of the line: the directory the link must be in
    lib: Path | None = None  # what that link points at


def kcat_line(
    properties: Path, *, kafka_version: str, installed: Librdkafka | None, own: Librdkafka | None, lib_dir: Path
) -> KcatLine:
    """The line that lists what ``properties``' principal may see. Rules, in order:

    1. no kcat installed, or the brokers accept the repeated nonce (Kafka before 4.0), or the installed kcat's
       librdkafka carries it once (2.6.1 and later): the plain line;
    2. else, if this process's librdkafka is fixed and its file known: the same kcat on it (``LD_LIBRARY_PATH``);
    3. else the plain line, and the note says which librdkafka it needs.
    """
    plain = f"kcat -F {shlex.quote(str(properties))} -L"
    if installed is None or not strict_nonce(kafka_version) or installed.version >= SCRAM_NONCE_FIXED:
        return KcatLine(plain)
    why = (
        f"kcat's own librdkafka {show(installed.version)} repeats its SCRAM nonce, which Kafka 4 refuses; fixed in "
        f"{show(SCRAM_NONCE_FIXED)}"
    )
    if own is not None and own.path is not None and own.version >= SCRAM_NONCE_FIXED:
        return KcatLine(
            f"LD_LIBRARY_PATH={shlex.quote(str(lib_dir))} {plain}",
            f"{why}: this runs that kcat on the monitor's librdkafka {show(own.version)}",
            lib_dir=lib_dir,
            lib=own.path,
        )
    return KcatLine(plain, f"{why}: install a kcat built on librdkafka {show(SCRAM_NONCE_FIXED)} or later")


def strict_nonce(kafka_version: str) -> bool:
    return (parse_version(kafka_version) or STRICT_NONCE_KAFKA) >= STRICT_NONCE_KAFKA


def clients_accepted(kafka_version: str) -> str:
    """Which clients the printed files let in, for the console: Java from 2.3 (tested 2.3.1, 3.9.1; the truststore is
    PKCS12 for them), librdkafka from 2.6.1 where the brokers check the nonce strictly."""
    rdkafka = f"librdkafka {show(SCRAM_NONCE_FIXED)}+" if strict_nonce(kafka_version) else "librdkafka"
    return f"NAME.properties for {rdkafka}, NAME.java.properties for Java clients 2.3+"


# --- the facts (I/O) -------------------------------------------------------------------------------------------------
def installed_kcat() -> Librdkafka | None:
    """The librdkafka of the ``kcat`` on PATH (``kcat -V`` names it), None without a kcat or if it cannot tell."""
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if not kcat:
        return None
    try:
        out = subprocess.run([kcat, "-V"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"librdkafka (\d+\.\d+\.\d+)", out)
    version = parse_version(m[1]) if m else None
    return Librdkafka(version) if version else None


def loaded_librdkafka() -> Librdkafka | None:
    """The librdkafka confluent-kafka loaded into this process: its version and file (from /proc/self/maps, so a
    wheel's bundled copy and a system one are found alike). None where that cannot be read."""
    import confluent_kafka

    version = parse_version(confluent_kafka.libversion()[0])
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return None
    paths = {
        line.split(None, 5)[5]
        for line in maps.splitlines()
        if len(line.split(None, 5)) == 6 and "/librdkafka" in line.split(None, 5)[5]
    }
    files = sorted(p for p in paths if Path(p).is_file())
    return Librdkafka(version, Path(files[0])) if version and files else None


def printed_kcat_line(L: StackLayout, name: str) -> KcatLine:
    """``kcat_line`` of ``<stack dir>/clients/<name>.properties`` on this machine's facts; makes (or renews) the link
    the line needs in ``<stack dir>/clients/librdkafka``."""
    line = kcat_line(
        L.clients_dir / f"{name}.properties",
        kafka_version=L.kafka_version,
        installed=installed_kcat(),
        own=loaded_librdkafka(),
        lib_dir=L.clients_dir / "librdkafka",
    )
    if line.lib_dir is not None and line.lib is not None:
        line.lib_dir.mkdir(parents=True, exist_ok=True)
        link = line.lib_dir / LIB_NAME
        if not (link.is_symlink() and link.resolve() == line.lib.resolve()):
            link.unlink(missing_ok=True)  # a link to a venv's earlier wheel, since upgraded
            link.symlink_to(line.lib)
    return line


__all__ = ["KcatLine", "Librdkafka", "SCRAM_NONCE_FIXED", "clients_accepted", "kcat_line", "printed_kcat_line"]
