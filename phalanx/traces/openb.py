"""Load the openb CSVs (alibaba/clusterdata `cluster-trace-gpu-v2023`) as Nodes and Pods.

Node list: `sn,cpu_milli,memory_mib,gpu,model`. A node gets cpu (m), memory (Mi), 1001 pods, the
extended resources `alibabacloud.com/gpu-count` and `alibabacloud.com/gpu-milli` (1000 per GPU) and the
label `alibabacloud.com/gpu-card-model` (when the model is set). Pod lists have 11 columns
(`name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,
scheduled_time`) or 5 (the first five). Every row is a pod, whatever its qos or phase (FGD-PROTOCOL §1).
A pod with `num_gpu` > 0 carries a `GpuRequest`: that many GPUs, `gpu_milli` each (clipped to 1000;
1000 when the column is absent; 0 when not positive) and the models of `gpu_spec` split on `|` (empty
pieces dropped); it also requests count·milli `alibabacloud.com/gpu-milli` so node totals stay counted.
Times (seconds from trace start) set `arrival` = creation_time and `duration` = deletion_time − (
scheduled_time or creation_time) for the timed replay; rows without them have arrival 0, no duration.

A malformed row raises InputError naming the file and the line.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from phalanx.api.objects import GpuRequest, Node, Pod, Source
from phalanx.api.reading import read_text
from phalanx.cluster.gpus import GPU_COUNT, GPU_MILLI, GPU_MODEL_LABEL, MILLI
from phalanx.errors import InputError

MIB = 1024 * 1024
PODS_PER_NODE = 1001
NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")
POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
               "creation_time", "deletion_time", "scheduled_time")
SHORT_POD_COLUMNS = POD_COLUMNS[:5]
NAMESPACE = "openb"


@dataclass(slots=True)
class OpenbTrace:
    nodes: list[Node] = field(default_factory=list)
    pods: list[Pod] = field(default_factory=list)

    @property
    def gpu_nodes(self) -> list[Node]:
        """Nodes with at least one GPU: the cluster of the fragmentation protocol."""
        return [n for n in self.nodes if n.allocatable.get(GPU_COUNT, 0) > 0]


def _rows(path: str, expected: tuple[tuple[str, ...], ...]) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, row) for each data row; the header must be one of `expected`."""
    try:
        text = read_text(path)
    except InputError as exc:
        raise InputError(f"cannot read: {exc.detail}", file=path) from None
    yield from _parse(path, io.StringIO(text, newline=""), expected)


def _parse(path: str, handle: Iterable[str],
           expected: tuple[tuple[str, ...], ...]) -> Iterator[tuple[int, dict[str, str]]]:
    reader = csv.reader(handle)
    try:
        header = tuple(h.strip() for h in next(reader))
    except StopIteration:
        raise InputError("empty file: expected a CSV header", file=path) from None
    except csv.Error as exc:
        raise InputError(str(exc), file=path, field="line 1") from None
    if header not in expected:
        want = " or ".join(",".join(cols) for cols in expected)
        raise InputError(f"unexpected header {','.join(header)!r}: want {want}", file=path, field="line 1")
    try:
        for row in reader:
            line = reader.line_num
            if not row or all(not cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise InputError(f"expected {len(header)} fields, got {len(row)}", file=path, field=f"line {line}")
            yield line, {k: v.strip() for k, v in zip(header, row, strict=True)}
    except csv.Error as exc:
        raise InputError(str(exc), file=path, field=f"line {reader.line_num}") from None


# ASCII digits only: Python's int() and float() also take `1_000` and other scripts' digits, the trace never has
# them. A decimal point or an exponent is fine as long as the value is whole (`1000.0`).
_NUMBER = re.compile(r"[+-]?[0-9]{1,30}(?:\.[0-9]{0,30})?(?:[eE][+-]?[0-9]{1,3})?")
# Bounds every column (millicores, MiB, GPUs, seconds) well inside int64 once scaled to bytes and summed.
MAX_VALUE = 10**9


def _int(row: dict[str, str], column: str, path: str, line: int, *, optional: bool = False) -> int | None:
    text = row.get(column, "")
    if text == "":
        if optional:
            return None
        raise InputError(f"{column} is empty", file=path, field=f"line {line}")
    if _NUMBER.fullmatch(text) is None:
        raise InputError(f"{column} must be an integer, got {text[:40]!r}", file=path, field=f"line {line}")
    number = float(text)
    if not number.is_integer():
        raise InputError(f"{column} must be an integer, got {text!r}", file=path, field=f"line {line}")
    if number < 0:
        raise InputError(f"{column} must not be negative, got {text}", file=path, field=f"line {line}")
    if number > MAX_VALUE:
        raise InputError(f"{column} must be at most {MAX_VALUE}, got {text}", file=path, field=f"line {line}")
    return int(text) if text.lstrip("+-").isdigit() else int(number)


def _required(row: dict[str, str], column: str, path: str, line: int) -> int:
    value = _int(row, column, path, line)
    assert value is not None
    return value


def load_nodes(path: str) -> list[Node]:
    nodes: list[Node] = []
    seen: set[str] = set()
    for index, (line, row) in enumerate(_rows(path, (NODE_COLUMNS,))):
        name = row["sn"]
        if not name:
            raise InputError("sn (the node name) is empty", file=path, field=f"line {line}")
        if name in seen:
            raise InputError(f"duplicate node {name!r}", file=path, field=f"line {line}")
        seen.add(name)
        gpus = _required(row, "gpu", path, line)
        allocatable = {"cpu": _required(row, "cpu_milli", path, line),
                       "memory": _required(row, "memory_mib", path, line) * MIB, "pods": PODS_PER_NODE,
                       GPU_COUNT: gpus, GPU_MILLI: gpus * MILLI}
        labels = {GPU_MODEL_LABEL: row["model"]} if row["model"] else {}
        nodes.append(Node(name=name, allocatable=allocatable, labels=labels, source=Source(path, index)))
    return nodes


def gpu_milli(raw: int | None) -> int:
    """KSS pod_csv_to_yaml.py: the column as is when in (0, 1000], 1000 above or when absent, else 0."""
    if raw is None:
        return MILLI
    if 0 < raw <= MILLI:
        return raw
    return MILLI if raw > MILLI else 0


def load_pods(path: str) -> list[Pod]:
    pods: list[Pod] = []
    seen: set[str] = set()
    for index, (line, row) in enumerate(_rows(path, (POD_COLUMNS, SHORT_POD_COLUMNS))):
        name = row["name"]
        if not name:
            raise InputError("name is empty", file=path, field=f"line {line}")
        if name in seen:
            raise InputError(f"duplicate pod {name!r}", file=path, field=f"line {line}")
        seen.add(name)
        requests = {"cpu": _required(row, "cpu_milli", path, line),
                    "memory": _required(row, "memory_mib", path, line) * MIB}
        count = _required(row, "num_gpu", path, line)
        gpu: GpuRequest | None = None
        if count > 0:
            milli = gpu_milli(_int(row, "gpu_milli", path, line, optional=True))
            models = tuple(m for m in row.get("gpu_spec", "").split("|") if m)
            gpu = GpuRequest(count, milli, models)
            requests[GPU_MILLI] = count * milli
        arrival = 0.0
        duration: float | None = None
        created = _int(row, "creation_time", path, line, optional=True)
        deleted = _int(row, "deletion_time", path, line, optional=True)
        scheduled = _int(row, "scheduled_time", path, line, optional=True)
        if created is not None:
            arrival = float(created)
            if deleted is not None:
                start = scheduled if scheduled is not None and scheduled >= created else created
                if deleted < start:
                    raise InputError(f"deletion_time {deleted} is before the pod started ({start})", file=path,
                                     field=f"line {line}")
                duration = float(deleted - start)
        pods.append(Pod(namespace=NAMESPACE, name=name, requests=requests, arrival=arrival, duration=duration,
                        source=Source(path, index), gpu=gpu))
    return pods


def load_trace(nodes_csv: str, pods_csv: str) -> OpenbTrace:
    return OpenbTrace(load_nodes(nodes_csv), load_pods(pods_csv))
