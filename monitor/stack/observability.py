"""Prometheus and Alertmanager of the local stack, from Debian's packages, with config rendered from deploy/
(package data: monitor.stack.packaged)."""

from __future__ import annotations

import os
import shutil
import string
import subprocess
from pathlib import Path

from monitor.core.errors import DependencyMissing
from monitor.stack.layout import ALERTMANAGERS, StackLayout
from monitor.stack.packaged import deploy_path
from monitor.stack.procs import ProcSpec

DEBIAN_PACKAGES = {
    "prometheus": "prometheus",
    "alertmanager": "prometheus-alertmanager",
    "node-exporter": "prometheus-node-exporter",
}
BINARIES = {
    "prometheus": ("prometheus",),
    "alertmanager": ("prometheus-alertmanager", "alertmanager"),
    "node-exporter": ("prometheus-node-exporter", "node_exporter"),
}


def find_binary(component: str) -> str | None:
    for name in BINARIES[component]:
        path = shutil.which(name)
        if path:
            return path
    return None


def ensure_installed(components: list[str], log: Path) -> dict[str, str]:
    """Install missing Debian packages (root only), then return the binaries' paths."""
    missing = [c for c in components if not find_binary(c)]
    if missing:
        packages = [DEBIAN_PACKAGES[c] for c in missing]
        if os.geteuid() != 0 or not shutil.which("apt-get"):
            raise DependencyMissing(f"{', '.join(missing)} not installed: run apt-get install {' '.join(packages)}")
        log.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        with open(log, "ab") as out:
            subprocess.call(["apt-get", "update", "-qq"], stdout=out, stderr=subprocess.STDOUT, env=env)
            rc = subprocess.call(
                ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
            )
        still = [c for c in components if not find_binary(c)]
        if rc != 0 or still:
            raise DependencyMissing(f"could not install {' '.join(packages)} (apt-get exit {rc}); see {log}")
    return {c: find_binary(c) for c in components}  # type: ignore[misc]  # each one found: checked above


SCRAPE_TOKEN_PLACEHOLDER = "no-token-yet"


def write_scrape_token(layout: StackLayout, token: str) -> None:
    """The bearer token Prometheus sends when it scrapes the service (mode 0600; Prometheus re-reads it each scrape)."""
    path = layout.scrape_token_file
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.touch(mode=0o600)
    tmp.chmod(0o600)
    tmp.write_text(token)
    tmp.replace(path)


def render_prometheus_config(layout: StackLayout) -> Path:
    tmpl = deploy_path("prometheus/prometheus.local.yml.tmpl").read_text()
    interval = layout.scrape_interval_seconds
    text = string.Template(tmpl).substitute(
        scrape_interval=f"{interval}s",
        scrape_timeout=f"{max(1, interval - 1)}s",
        alertmanagers=", ".join(f'"127.0.0.1:{layout.alertmanager_web_port(i)}"' for i in range(ALERTMANAGERS)),
        service_port=layout.service_port,
        prometheus_port=layout.prometheus_port,
        rules_dir=layout.prometheus_rules_dir,
        scrape_token_file=layout.scrape_token_file,
    )
    layout.prometheus_rules_dir.mkdir(parents=True, exist_ok=True)
    if not layout.scrape_token_file.exists():
        write_scrape_token(layout, SCRAPE_TOKEN_PLACEHOLDER)
    path = layout.prometheus_dir / "prometheus.yml"
    path.write_text(text)
    return path


def prometheus_spec(layout: StackLayout, binary: str) -> ProcSpec:
    config = render_prometheus_config(layout)
    return ProcSpec(
        name="prometheus",
        argv=[
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={layout.prometheus_dir / 'data'}",
            f"--web.listen-address=127.0.0.1:{layout.prometheus_port}",
            "--web.enable-lifecycle",
            "--web.enable-admin-api",
            "--storage.tsdb.retention.time=15d",
            "--query.lookback-delta=1m",
        ],
        log=layout.logs_dir / "prometheus.log",
    )


def alertmanager_spec(layout: StackLayout, binary: str, i: int = 0) -> ProcSpec:
    """Alertmanager ``i`` of the stack's pair: gossip on its loopback cluster port, every other member its peer (they
    share silences and the notification log, so the pair notifies once; each is sent every alert by the engine)."""
    home = layout.alertmanager_instance_dir(i)
    home.mkdir(parents=True, exist_ok=True)
    config = home / "alertmanager.yml"
    shutil.copyfile(deploy_path("alertmanager/alertmanager.local.yml"), config)
    gossip = f"127.0.0.1:{layout.alertmanager_cluster_port(i)}"
    peers = [f"--cluster.peer=127.0.0.1:{layout.alertmanager_cluster_port(j)}" for j in range(ALERTMANAGERS) if j != i]
    name = layout.alertmanager_name(i)
    return ProcSpec(
        name=name,
        argv=[
            binary,
            f"--config.file={config}",
            f"--storage.path={home / 'data'}",
            f"--web.listen-address=127.0.0.1:{layout.alertmanager_web_port(i)}",
            f"--cluster.listen-address={gossip}",
            f"--cluster.advertise-address={gossip}",  # loopback is not advertised unless named
            *peers,
        ],
        log=layout.logs_dir / f"{name}.log",
    )


def node_exporter_spec(layout: StackLayout, binary: str) -> ProcSpec:
    """The machine's node_exporter, as MSK's open monitoring serves one beside each broker (profile msk)."""
    return ProcSpec(
        name="node-exporter",
        argv=[
            binary,
            f"--web.listen-address=127.0.0.1:{layout.node_exporter_port}",
            # an empty textfile dir of its own: names the stack dir in argv, as ProcessTable wants
            f"--collector.textfile.directory={layout.dir / 'node-exporter'}",
        ],
        log=layout.logs_dir / "node-exporter.log",
    )
