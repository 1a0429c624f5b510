"""deploy/systemd: `systemd-analyze verify` accepts every unit, and `systemd-analyze security --offline=true` scores
every service unit at most 4.0 (systemd 252+ can score a unit file without a running systemd).

verify checks that ExecStart binaries exist and are executable. The units point at /usr/bin/kafka-health, where a
package installs it; this machine has it in the virtualenv. So the units are verified inside a throw-away root
(--root) laid out like an installed system: systemd's own units, /bin/sh, and /usr/bin/kafka-health as a launcher
of the real console script. Nothing about the units is changed for the check.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from tests.unit._deploy import DEPLOY, run, tool

pytestmark = pytest.mark.unit

UNITS = sorted(p.name for p in (DEPLOY / "systemd").iterdir() if p.suffix in (".service", ".timer"))
SYSTEM_UNITS = Path("/usr/lib/systemd/system")


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    if not SYSTEM_UNITS.is_dir():
        pytest.skip("systemd's units are not installed: apt-get install systemd")
    root = tmp_path_factory.mktemp("root")
    shutil.copytree(SYSTEM_UNITS, root / "usr/lib/systemd/system", symlinks=True)
    (root / "bin").mkdir()
    shutil.copy("/bin/sh", root / "bin/sh")
    launcher = root / "usr/bin/kafka-health"
    launcher.parent.mkdir(parents=True)
    launcher.write_text(f'#!/bin/sh\nexec {sys.executable} -m monitor.cli "$@"\n')
    launcher.chmod(0o755)
    etc = root / "etc/systemd/system"
    etc.mkdir(parents=True)
    for name in UNITS:
        shutil.copy(DEPLOY / "systemd" / name, etc / name)
    return root


def _instance(name: str) -> str:
    return name.replace("@.", "@0.")  # a template is verified through one instance


@pytest.mark.parametrize("name", UNITS)
def test_systemd_analyze_verify(root, name):
    res = run([tool("systemd-analyze", "systemd"), "verify", f"--root={root}", _instance(name)])
    assert res.returncode == 0 and not res.stderr.strip(), res.stdout + res.stderr


def test_verify_rejects_a_broken_unit(root):
    """The check has teeth: a typo in a directive or a missing binary is reported."""
    text = (DEPLOY / "systemd" / "kafka-health.service").read_text()
    broken = text.replace("Restart=on-failure", "Restart=sometimes").replace("/usr/bin/kafka-health", "/usr/bin/kh")
    (root / "etc/systemd/system/broken.service").write_text(broken)
    res = run([tool("systemd-analyze", "systemd"), "verify", f"--root={root}", "broken.service"])
    assert "restart specifier" in res.stderr and "/usr/bin/kh" in res.stderr


def test_every_service_has_a_timer_or_an_install_section():
    for name in UNITS:
        text = (DEPLOY / "systemd" / name).read_text()
        if name.endswith(".service") and "Type=oneshot" in text:
            assert name.replace(".service", ".timer") in UNITS, name
        else:
            assert "[Install]" in text, name


SERVICES = [name for name in UNITS if name.endswith(".service")]
MOST_EXPOSED = 4.0  # systemd's "OK" band ends at 3.9; MEDIUM starts at 5.0


def _exposure(unit: Path) -> tuple[float, str]:
    res = run([tool("systemd-analyze", "systemd"), "security", "--offline=true", "--no-pager", str(unit)])
    if "--offline" in res.stderr and res.returncode != 0:
        pytest.skip(f"systemd-analyze cannot check offline here (systemd 252+ needed): {res.stderr.strip()}")
    found = re.search(r"Overall exposure level for \S+: (\d+(?:\.\d+)?)", res.stdout)
    assert found, res.stdout + res.stderr
    return float(found.group(1)), res.stdout


@pytest.mark.parametrize("name", SERVICES)
def test_systemd_analyze_security_scores_each_service_at_most_4(name):
    score, report = _exposure(DEPLOY / "systemd" / name)
    weak = "\n".join(line for line in report.splitlines() if line.startswith("✗"))
    assert score <= MOST_EXPOSED, f"{name}: exposure {score}\n{weak}"


def test_security_check_has_teeth(tmp_path):
    """The same unit without its hardening scores far worse (the score is measured, not a constant)."""
    text = (DEPLOY / "systemd" / "kafka-health.service").read_text()
    bare = tmp_path / "bare.service"
    hardening = (
        r"(?m)^(NoNewPrivileges|Protect\w+|Private\w+|Restrict\w+|SystemCall\w+|"
        r"CapabilityBoundingSet|AmbientCapabilities|LockPersonality|RemoveIPC|UMask)=.*\n"
    )
    bare.write_text(re.sub(hardening, "", text))
    assert _exposure(bare)[0] > 8
