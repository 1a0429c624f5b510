"""Client software versions (KIP-511 ``clientSoftwareName``/``Version``), shared by the outdated-client alert and
the advisor so both judge a client the same way."""

from __future__ import annotations

import re


def parse_version(v: str) -> tuple[int, ...]:
    nums = re.findall(r"\d+", v.split("-")[0])
    return tuple(int(n) for n in nums[:4])


def is_outdated(name: str, version: str, min_versions: dict[str, str]) -> bool:
    minimum = min_versions.get(name)
    if minimum is None or not parse_version(version):
        return False  # unknown software or unparseable version: not our call
    return parse_version(version) < parse_version(minimum)
