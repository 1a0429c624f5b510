"""The kcat line a secured stack prints: the plain one wherever it authenticates, else the installed kcat on the
monitor's own librdkafka (monitor/stack/kcat.py says why: librdkafka before 2.6.1 repeats its SCRAM nonce, which
Kafka 4 brokers refuse)."""

from pathlib import Path

import pytest

from monitor.stack.kcat import Librdkafka, clients_accepted, kcat_line, parse_version

FILE = Path("/s/clients/payments.properties")
LIB_DIR = Path("/s/clients/librdkafka")
OWN = Librdkafka((2, 16, 0), Path("/venv/confluent_kafka.libs/librdkafka-0cb94173.so.1"))
DEBIAN_12 = Librdkafka((2, 0, 2))
PLAIN = "kcat -F /s/clients/payments.properties -L"
ON_OWN = "LD_LIBRARY_PATH=/s/clients/librdkafka kcat -F /s/clients/payments.properties -L"

CASES = [
    # (number, kafka, installed kcat's librdkafka, this process's, expected line, note contains)
    (1, "4.4.0", DEBIAN_12, OWN, ON_OWN, "librdkafka 2.0.2 repeats its SCRAM nonce"),
    (2, "4.1.1", DEBIAN_12, OWN, ON_OWN, "the monitor's librdkafka 2.16.0"),
    (3, "3.9.1", DEBIAN_12, OWN, PLAIN, ""),  # 3.9 brokers accept the repeated nonce (endsWith)
    (4, "4.4.0", Librdkafka((2, 6, 1)), OWN, PLAIN, ""),  # the first fixed release
    (5, "4.4.0", Librdkafka((2, 6, 0)), OWN, ON_OWN, "2.6.0"),  # 2.6.0 still repeats it
    (6, "4.4.0", None, OWN, PLAIN, ""),  # no kcat installed: nothing to run it on
    (
        7,
        "4.4.0",
        DEBIAN_12,
        Librdkafka((2, 3, 0), Path("/usr/lib/librdkafka.so.1")),
        PLAIN,
        "install a kcat built on librdkafka 2.6.1",
    ),  # our own is no better
    (8, "4.4.0", DEBIAN_12, Librdkafka((2, 16, 0)), PLAIN, "install a kcat"),  # its file unknown
]


@pytest.mark.parametrize("n,kafka,installed,own,line,note", CASES, ids=[str(c[0]) for c in CASES])
def test_kcat_line(n, kafka, installed, own, line, note):
    got = kcat_line(FILE, kafka_version=kafka, installed=installed, own=own, lib_dir=LIB_DIR)
    assert got.command == line, n
    assert (note in got.note) if note else got.note == "", (n, got.note)
    assert (got.lib_dir, got.lib) == ((LIB_DIR, own.path) if line == ON_OWN else (None, None)), n


def test_paths_are_quoted_for_the_shell():
    got = kcat_line(
        Path("/a b/payments.properties"),
        kafka_version="4.4.0",
        installed=DEBIAN_12,
        own=OWN,
        lib_dir=Path("/a b/librdkafka"),
    )
    assert got.command == "LD_LIBRARY_PATH='/a b/librdkafka' kcat -F '/a b/payments.properties' -L"


def test_versions_read_as_kcat_and_librdkafka_print_them():
    assert parse_version(
        "Version 1.7.1 (JSON, Transactions, IncrementalAssign, librdkafka 2.0.2 builtin.features=gzip"
    ) == (1, 7, 1)  # the caller searches after "librdkafka "
    assert parse_version("2.16.0") == (2, 16, 0) and parse_version("none") is None


def test_the_console_says_which_clients_the_files_let_in():
    assert clients_accepted("4.4.0") == (
        "NAME.properties for librdkafka 2.6.1+, NAME.java.properties for Java clients 2.3+"
    )
    assert clients_accepted("3.9.1").startswith("NAME.properties for librdkafka, ")
