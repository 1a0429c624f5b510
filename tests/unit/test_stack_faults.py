"""Pure parts of the stack's fault helpers."""

import pytest

from tests.harness.faults import java_string_hash

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    "s,expected",
    [
        ("", 0),
        ("a", 97),
        ("hello", 99162322),
        ("polygenelubricants", -(2**31)),  # Java's Integer.MIN_VALUE: Utils.abs must mask, not negate
        ("Aa", 2112),
        ("BB", 2112),
    ],
)
def test_java_string_hash_is_javas(s, expected):
    assert java_string_hash(s) == expected
