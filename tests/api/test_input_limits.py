"""Input that is valid YAML or JSON but beyond what Kubernetes takes: every case is an InputError naming the file,
the object and the field, never another exception (the fuzz campaign's findings)."""

import os
import re
from pathlib import Path

import pytest

from phalanx import InputError, load_paths
from phalanx.api.quantity import parse_duration
from phalanx.api.reading import MAX_NESTING, read_text

POD = ("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n"
       "  containers: [{name: c, resources: {requests: {cpu: '1'}}}]\n")


def load_text(tmp_path: Path, text: str, name: str = "in.yaml") -> None:
    path = tmp_path / name
    path.write_text(text)
    load_paths([str(path)])


# --- nesting ---

@pytest.mark.parametrize(("name", "text", "where"), [
    ("flow.yaml", "a: " + "[" * 60_000 + "]" * 60_000 + "\n", "line 1"),  # segfaulted the C YAML loader
    ("block.yaml", "- " * 30_000 + "x\n", "line 1"),
    ("indented.yaml", "".join(" " * i + f"k{i}:\n" for i in range(450)) + " " * 450 + "v: 1\n", "line 201"),
    ("deep.json", '{"a": ' * 5_000 + "1" + "}" * 5_000, "line 1"),  # RecursionError in the JSON reader
    ("lines.json", '{"kind": "Pod",\n "a": ' + "[\n" * 300 + "]" * 300 + "}", "line 201"),
    ("mapping.yaml", "kind: Pod\nspec: " + "{a: " * 300 + "1" + "}" * 300 + "\n", "Pod (unnamed)"),
], ids=lambda value: value if isinstance(value, str) and len(value) < 20 else "")
def test_deep_nesting_is_rejected_before_parsing(tmp_path: Path, name: str, text: str, where: str) -> None:
    with pytest.raises(InputError, match=f"{name}: {re.escape(where)}: nests deeper than {MAX_NESTING} levels"):
        load_text(tmp_path, text, name)


def test_a_deep_object_is_named_with_its_line(tmp_path: Path) -> None:
    text = POD + "---\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: ns\ndata:\n  x: " + "[" * 201 + "]" * 201
    with pytest.raises(InputError, match=r"in.yaml: ConfigMap ns/c: nests deeper than 200 levels .* at line 12$"):
        load_text(tmp_path, text)


def test_nesting_within_the_bound_and_brackets_in_strings_are_fine(tmp_path: Path) -> None:
    annotation = '{"a":' * 150 + "1" + "}" * 150  # a JSON string, as last-applied-configuration holds
    load_text(tmp_path, POD.replace("metadata: {name: p}", f"metadata: {{name: p, annotations: {{x: '{annotation}', "
                                                            "y: '[[[[[[[[[['}}"))


@pytest.mark.parametrize(("name", "text"), [  # the campaign's finding: a valid file refused as too deep
    ("string.yaml", POD.replace("metadata: {name: p}", "metadata: {name: p, annotations: {x: '" + "[" * 300 + "'}}")),
    ("closers.yaml", POD.replace("metadata: {name: p}", "metadata: {name: p, annotations: {x: '" + "]" * 300 + "'}}")),
    ("comment.yaml", "# " + "{" * 500 + "\n" + POD),
    ("block-scalar.yaml", POD + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  s: |\n"
     + "    " + "[" * 300 + "\n" + "    " + "- " * 300 + "\n" + " " * 500 + "x\n"),
    ("string.json", '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations": {"x": "'
     + "[" * 300 + '\\"' + "{" * 300 + '\\\\"}}, "spec": {"containers": [{"name": "c"}]}}'),
], ids=lambda value: value if len(value) < 20 else "")
def test_brackets_in_strings_and_comments_do_not_nest(tmp_path: Path, name: str, text: str) -> None:
    load_text(tmp_path, text, name)


def test_closers_in_a_comment_hide_no_real_nesting(tmp_path: Path) -> None:
    """Brackets in comments count for nothing either way: closing ones do not make deep nesting shallow."""
    text = "# " + "]" * 300 + "\n" + POD.replace("containers:", "x: " + "[" * 250 + "]" * 250 + "\n  containers:")
    with pytest.raises(InputError, match=r"in\.yaml: Pod p: nests deeper than 200 levels"):
        load_text(tmp_path, text)


# --- numbers ---

@pytest.mark.parametrize(("name", "text"), [
    ("big.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: a}\nstatus: {allocatable: {cpu: " + "9" * 5000 + "}}\n"),
    ("big-block.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: a}\nspec:\n  x: " + "9" * 5000 + "\n"),
    ("big.json", '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a"}, "spec": {"x": ' + "9" * 5000 + "}}"),
])
def test_integers_past_pythons_digit_limit(tmp_path: Path, name: str, text: str) -> None:
    with pytest.raises(InputError, match=f"{name}: invalid (YAML|JSON): a number has too many digits"):
        load_text(tmp_path, text, name)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_json_constants_kubernetes_does_not_read(tmp_path: Path, constant: str) -> None:
    with pytest.raises(InputError, match=f"invalid JSON: {constant} is not a JSON number"):
        load_text(tmp_path, '{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "a"}, "status": '
                            f'{{"allocatable": {{"cpu": {constant}}}}}}}', "n.json")


@pytest.mark.parametrize(("spec", "field"), [
    ("  terminationGracePeriodSeconds: " + "9" * 400, "spec.terminationGracePeriodSeconds"),
    ("  tolerations: [{key: a, operator: Exists, effect: NoExecute, tolerationSeconds: " + "9" * 400 + "}]",
     r"spec.tolerations\[0\].tolerationSeconds"),
    ("  priority: " + "9" * 30, "spec.priority"),
])
def test_huge_integers_name_their_field(tmp_path: Path, spec: str, field: str) -> None:
    with pytest.raises(InputError, match=f"Pod p: {field}: must (fit in a 64-bit integer|be at most)"):
        load_text(tmp_path, POD + spec + "\n")


def test_huge_durations_are_rejected() -> None:
    for raw in (10**400, 1e300, "99999999999999999999h"):
        with pytest.raises(ValueError, match="longer than Go's maximum"):
            parse_duration(raw)


def test_requests_whose_sum_overflows_int64(tmp_path: Path) -> None:
    text = POD.replace("containers: [{name: c, resources: {requests: {cpu: '1'}}}]",
                       "containers: [{name: c, resources: {requests: {memory: 7Ei}}}, "
                       "{name: d, resources: {requests: {memory: 7Ei}}}]\n  overhead: {cpu: '1'}")
    with pytest.raises(InputError, match=r"Pod p: spec.containers: the pod's memory requests add up to more"):
        load_text(tmp_path, text)
    text = POD.replace("cpu: '1'", "memory: 7Ei") + "  overhead: {memory: 7Ei}\n"
    with pytest.raises(InputError, match="memory requests add up to more"):
        load_text(tmp_path, text)


@pytest.mark.parametrize("priority", [-(2**31) - 1, -(10**11)])
def test_pod_group_priority_has_the_int32_lower_bound(tmp_path: Path, priority: int) -> None:
    with pytest.raises(InputError, match=r"PodGroup g: spec.priority: must be at least -2147483648"):
        load_text(tmp_path, "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {name: g}\n"
                            f"spec: {{schedulingPolicy: {{basic: {{}}}}, priority: {priority}}}\n")


@pytest.mark.parametrize("value", ["'٣%'", "'３0%'", "'1_0%'", "'" + "0" * 20 + "50%'", "'" + "9" * 5000 + "%'"])
def test_pdb_percentages_take_ascii_digits_only(tmp_path: Path, value: str) -> None:
    text = ("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: d}\n"
            f"spec: {{minAvailable: {value}, selector: {{}}}}\n")
    if value.startswith("'0"):  # leading zeros are digits like any other: 50%
        load_text(tmp_path, text)
        return
    with pytest.raises(InputError, match=r"PodDisruptionBudget d: spec.minAvailable: must"):
        load_text(tmp_path, text)


@pytest.mark.parametrize("parallelism", [100_001, 10**11])
def test_job_parallelism_is_bounded(tmp_path: Path, parallelism: int) -> None:
    with pytest.raises(InputError, match=r"Job j: spec.parallelism: must be at most 100000"):
        load_text(tmp_path, "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n"
                            f"  parallelism: {parallelism}\n  template: {{spec: {{containers: [{{name: c}}]}}}}\n")


# --- files ---

def test_only_regular_files_are_read(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="/dev/zero: not a regular file"):
        load_paths(["/dev/zero"])
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=r"pipe.yaml: not a regular file"):
        load_paths([str(tmp_path)])


def test_files_past_the_size_cap_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from phalanx.api import reading

    path = tmp_path / "big.yaml"
    path.write_text(POD)
    monkeypatch.setattr(reading, "MAX_FILE_BYTES", 16)
    with pytest.raises(InputError, match=r"big.yaml: is [0-9]+ bytes, more than"):
        read_text(str(path))


def test_reading_a_small_file_does_not_reserve_the_size_cap(tmp_path: Path) -> None:
    """`read(n)` allocates n bytes before it reads: asking for the cap (2 GiB) made every file cost 2 GiB."""
    import tracemalloc

    path = tmp_path / "pod.yaml"
    path.write_text(POD)
    tracemalloc.start()
    try:
        assert read_text(str(path)) == POD
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20


def test_device_capacities_counted_in_thousandths_fit_int64(tmp_path: Path) -> None:
    from tests import dra_builders as b

    device = b.gpu("gpu-0")
    device["capacity"]["memory"] = {"value": "9223372036854775807"}
    with pytest.raises(InputError, match=r"ResourceSlice n-gpus: spec.devices\[0\].capacity.memory.value: quantity "
                                         r"'9223372036854775807' is too large"):
        b.load(tmp_path, b.node("n"), b.gpu_slice("n", [device]))


def test_user_priority_classes_are_bounded_as_the_api_server_bounds_them(tmp_path: Path) -> None:
    text = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: NAME}\nvalue: VALUE\n"
    with pytest.raises(InputError, match="PriorityClass urgent: value: must be at most 1000000000"):
        load_text(tmp_path, text.replace("NAME", "urgent").replace("VALUE", "1000000001"))
    load_text(tmp_path, text.replace("NAME", "system-node-critical").replace("VALUE", "2000001000"))
