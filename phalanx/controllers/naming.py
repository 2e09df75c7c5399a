"""Generated pod names that look like the real controllers' (`web-7c9f4`) but repeat from run to run: the
suffix is a digest of the seed, the owner and a serial number, spelled in Kubernetes' name alphabet."""

from __future__ import annotations

import hashlib

from phalanx.api.apps import safe_encode


def suffix(seed: int, owner: str, serial: int, length: int = 5) -> str:
    digest = hashlib.sha256(f"{seed}/{owner}/{serial}".encode()).digest()
    return safe_encode(int.from_bytes(digest[:8], "big"), length)
