"""The host ports a pod takes on its node: what the NodePorts Filter compares (util.GetHostPorts).

A container port with a `hostPort` (1 to 65535) binds that port on the node for its protocol (TCP unless
said) and host IP (every address, 0.0.0.0, unless said). Restartable init containers (sidecars,
`restartPolicy: Always`) count, as they run as long as the pod; other init containers do not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from phalanx.api.fields import fail, integer, mapping, sequence, text

HostPort = tuple[str, str, int]  # (host IP, protocol, port), as HostPortInfo keeps them
BIND_ALL = "0.0.0.0"
PROTOCOLS = ("TCP", "UDP", "SCTP")


def parse_host_ports(spec: Mapping[str, Any], field: str) -> tuple[HostPort, ...]:
    """The host ports of a pod spec's sidecars then containers, in order (validated as the API server does
    for the fields read: port range, protocol)."""
    found: list[HostPort] = []
    groups = (("initContainers", True), ("containers", False))
    for key, sidecars_only in groups:
        for i, raw in enumerate(sequence(spec.get(key), f"{field}.{key}")):
            container = mapping(raw, f"{field}.{key}[{i}]")
            if sidecars_only and container.get("restartPolicy") != "Always":
                continue
            for j, port in enumerate(sequence(container.get("ports"), f"{field}.{key}[{i}].ports")):
                where = f"{field}.{key}[{i}].ports[{j}]"
                entry = mapping(port, where)
                host_port = entry.get("hostPort")
                if host_port is None or host_port == 0:
                    continue
                number = integer(host_port, f"{where}.hostPort", minimum=1, maximum=65535)
                protocol = text(entry.get("protocol"), f"{where}.protocol") or "TCP"
                if protocol not in PROTOCOLS:
                    raise fail(f"{where}.protocol", f"unsupported value {protocol!r}: one of {', '.join(PROTOCOLS)}")
                found.append((text(entry.get("hostIP"), f"{where}.hostIP") or BIND_ALL, protocol, number))
    return tuple(found)


def conflicts(wanted: HostPort, used: Mapping[HostPort, int]) -> bool:
    """HostPortInfo.CheckConflict: a port wanted on every address conflicts with that port on any address; one
    wanted on an address, with that port on the same address or on every address."""
    ip, protocol, port = wanted
    if ip == BIND_ALL:
        return any(p == port and proto == protocol for _, proto, p in used)
    return (ip, protocol, port) in used or (BIND_ALL, protocol, port) in used
