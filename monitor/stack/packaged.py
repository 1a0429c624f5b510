"""The files of deploy/ that ``stack`` and ``demo`` read, found as package data (importlib.resources).

deploy/ is where operators look and the one copy of these files. ``monitor/stack/deploy/`` mirrors the part of it
that the code reads with symlinks (kafka/, the local Prometheus and Alertmanager configs, grafana/provisioning/):
a source checkout reads deploy/ through them, and the wheel build copies their targets into the package, so an
installed ``kafka-health`` runs from any directory without a checkout. A file the code reads from deploy/ gets its
symlink there too; ``.ci/wheel-test`` proves the installed wheel carries it.

Callers get real paths, not Traversables: Maven, the JVMs and Prometheus open these files long after this process
looks them up. pip always installs a wheel as files, so ``files()`` is a directory on disk.
"""

from __future__ import annotations

from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from monitor.core.errors import StackError


def deploy_path(relative: str) -> Path:
    """deploy/RELATIVE (e.g. ``"kafka/pom.xml"``) as carried by the installed package. Not checked for existence:
    the caller's own open names the path when it is missing."""
    resource = files("monitor.stack").joinpath("deploy")
    for part in relative.split("/"):
        resource = resource.joinpath(part)
    return _on_disk(resource)


def grafana_provisioning_dir() -> Path:
    """Grafana's provisioning (datasource and dashboard provider): deploy/grafana/provisioning in a checkout, its
    copy inside the package when installed from a wheel."""
    return deploy_path("grafana/provisioning").resolve()


def dashboards_json_dir() -> Path:
    """The generated dashboards (``kafka-health dashboards build``), package data of ``dashboards``."""
    return _on_disk(files("dashboards").joinpath("json"))


def _on_disk(resource: Traversable) -> Path:
    if not isinstance(resource, Path):  # a zip import: no other process could open the file
        raise StackError(f"kafka-health must be installed as files (pip install), not imported from {resource}")
    return resource
