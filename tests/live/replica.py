"""`phalanx run` as a process of its own, one replica of a Deployment: its probes and metrics over HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

from phalanx.verify.controlplane import free_port


class Replica:
    def __init__(self, kubeconfig: Path, namespace: str, lease: str) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "phalanx", "run", "--kubeconfig", str(kubeconfig), "--profile", "gang",
             "--namespace", namespace, "--leader-elect-resource-namespace", namespace,
             "--leader-elect-resource-name", lease, "--leader-elect-lease-duration", "3",
             "--leader-elect-renew-deadline", "2", "--leader-elect-retry-period", "0.5",
             "--metrics-bind-address", f"127.0.0.1:{self.port}"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.lines: list[str] = []
        # Drained all along: a full pipe would block the process on its next log line.
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)

    def output(self, timeout: float = 10.0) -> str:
        """Everything the process wrote; once it has exited, to the end."""
        if self.proc.poll() is not None:
            self._reader.join(timeout)
        return "".join(self.lines)

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=2) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, ""
        except OSError:
            return 0, ""

    def leading(self) -> bool:
        status, text = self.get("/metrics")
        return status == 200 and "\nphalanx_leader 1.0" in text
