"""Wide-area latency on loopback: is sch_netem there, and a userspace delay proxy for when it is not.

netem (``tc qdisc add dev … netem delay``) needs the kernel's sch_netem and root, and on ``lo`` it would
delay every loopback user of a shared machine; ``netem_status`` only says whether this kernel has it and on
what evidence (/proc/modules, the module file, the kernel config, ``modprobe -n``), never guesses.

``DelayProxy`` (testweb/delayproxy.py) is the fallback a benchmark can always use: a TCP proxy on loopback
adding a set round trip to each exchange.
"""

from __future__ import annotations

import gzip
import platform
import subprocess
from pathlib import Path

from testweb.delayproxy import DelayProxy

__all__ = ["DelayProxy", "netem_status", "network_words"]


def _kernel_config() -> str:
    release = platform.release()
    for path in (Path(f"/boot/config-{release}"), Path("/proc/config.gz")):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        return gzip.decompress(data).decode(errors="replace") if path.suffix == ".gz" else data.decode(errors="replace")
    return ""


def netem_status() -> tuple[bool | None, str]:
    """(True: this kernel has sch_netem / False: it has not / None: cannot tell, evidence in words)."""
    try:
        if any(line.split()[0] == "sch_netem" for line in Path("/proc/modules").read_text().splitlines() if line):
            return True, "sch_netem loaded (/proc/modules)"
    except OSError:
        pass
    release = platform.release()
    modules = Path(f"/lib/modules/{release}")
    found = list(modules.glob("kernel/net/sched/sch_netem.ko*")) if modules.is_dir() else []
    if found:
        return True, f"sch_netem module present ({found[0]})"
    for line in _kernel_config().splitlines():
        if line.startswith("CONFIG_NET_SCH_NETEM="):
            return True, f"kernel config {line}"
        if line == "# CONFIG_NET_SCH_NETEM is not set":
            return False, "kernel config: CONFIG_NET_SCH_NETEM is not set"
    try:
        probe = subprocess.run(["modprobe", "-n", "sch_netem"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None, f"cannot tell: no sch_netem in /proc/modules or {modules}, no kernel config, no modprobe"
    if probe.returncode == 0:
        return True, "modprobe -n sch_netem finds it"
    return False, f"not loaded, no module under {modules}, modprobe -n: {probe.stderr.strip()[:120]}"


def network_words(rtt_ms: float) -> str:
    """One line on the network a run went through, for its report."""
    netem, evidence = netem_status()
    has = {True: "has sch_netem", False: "has no sch_netem", None: "may or may not have sch_netem"}[netem]
    if rtt_ms > 0:
        proxy = f"loopback through a userspace delay proxy adding {rtt_ms:g} ms a round trip"
        return f"{proxy} (this kernel {has}: {evidence})"
    return f"loopback, no added latency (this kernel {has}: {evidence}; --latency-ms adds a round trip by proxy)"
