"""Loading folders as they come: `kubectl get -A -o yaml` snapshots, Helm charts and kustomize folders beside the
manifests, YAML 1.1 booleans."""

from pathlib import Path

import pytest

from phalanx import InputError, load_paths
from tests.builders import MakeNode, MakePod, MakePodGroup, MakePriorityClass, inputs_of, write_manifests

NODE = MakeNode("node-a").alloc(cpu="16", memory="64Gi")


# --- built-in and missing PriorityClasses ---

@pytest.mark.parametrize(("name", "value"), [("system-node-critical", 2_000_001_000),
                                             ("system-cluster-critical", 2_000_000_000)])
def test_the_system_priority_classes_are_known_without_being_in_the_input(name: str, value: int) -> None:
    inputs = inputs_of(NODE, MakePod("coredns", "kube-system").req(cpu="100m").priority_class(name))
    assert inputs.pods[0].priority == value
    assert not inputs.notices


def test_an_input_class_of_a_system_name_wins() -> None:
    inputs = inputs_of(MakePriorityClass("system-cluster-critical", 5), MakePod("p").req(cpu="1").priority_class(
        "system-cluster-critical"))
    assert inputs.pods[0].priority == 5


def test_a_pod_naming_a_missing_class_keeps_its_admitted_priority_with_one_notice() -> None:
    inputs = inputs_of(MakePod("a").req(cpu="1").priority_class("batch-high").priority(7000),
                       MakePod("b").req(cpu="1").priority_class("batch-high").priority(7000),
                       MakePod("c").req(cpu="1").priority_class("infra").priority(9),
                       MakePodGroup("g").gang(1).priority_class("infra").priority(9))
    assert [p.priority for p in inputs.pods] == [7000, 7000, 9]
    assert inputs.pod_groups[0].priority == 9
    assert inputs.notices == ["no PriorityClass named 'batch-high', 'infra': the objects naming it keep their own "
                              "spec.priority"]


def test_a_missing_class_without_a_priority_is_still_an_error() -> None:
    with pytest.raises(InputError, match=r"spec\.priorityClassName: no PriorityClass named 'gone'"):
        inputs_of(MakePod("a").req(cpu="1").priority_class("gone"))


# --- folders holding more than manifests ---

def _chart_folder(root: Path) -> Path:
    chart = root / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: web\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("replicas: 3\nimage: {repository: nginx}\n")
    (chart / "values-prod.yaml").write_text("replicas: 9\n")
    (chart / "templates" / "deployment.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n"
        "{{- if .Values.x }}\n  labels: {a: b}\n{{- end }}\n")
    (chart / "templates" / "job.yaml").write_text(  # parses as YAML, but is no Job until rendered
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: train}\nspec:\n  parallelism: '{{ .Values.n }}'\n")
    (root / "kustomization.yaml").write_text("resources:\n- nodes.yaml\n")
    (root / "package.json").write_text('{"name": "tools", "version": "1.0.0"}')
    (root / "settings.yaml").write_text("# editor settings\nindent: 2\n---\ntheme: dark\n")
    write_manifests(root / "nodes.yaml", NODE, MakePod("web").req(cpu="1"))
    return root


def test_non_kubernetes_files_in_a_folder_are_skipped_with_one_notice(tmp_path: Path) -> None:
    inputs = load_paths([str(_chart_folder(tmp_path))])
    assert [n.name for n in inputs.nodes] == ["node-a"]
    assert [p.name for p in inputs.pods] == ["web"]
    assert len(inputs.notices) == 1
    assert inputs.notices[0].startswith("skipped 8 file(s) in folders that hold no Kubernetes objects (")


@pytest.mark.parametrize("name", ["values.yaml", "package.json", "settings.yaml"])
def test_a_non_kubernetes_file_named_on_the_command_line_still_fails(tmp_path: Path, name: str) -> None:
    _chart_folder(tmp_path)
    path = tmp_path / name if (tmp_path / name).exists() else tmp_path / "chart" / name
    with pytest.raises(InputError, match=r"kind: is required|is not an object"):
        load_paths([str(path)])


def test_a_folder_file_mixing_objects_and_other_documents_still_fails(tmp_path: Path) -> None:
    (tmp_path / "mixed.yaml").write_text("apiVersion: v1\nkind: Node\nmetadata: {name: a}\n---\nfoo: bar\n")
    with pytest.raises(InputError, match="kind: is required"):
        load_paths([str(tmp_path)])


def test_a_broken_manifest_in_a_folder_still_fails(tmp_path: Path) -> None:
    (tmp_path / "broken.yaml").write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: web\n")
    with pytest.raises(InputError, match="invalid YAML"):
        load_paths([str(tmp_path)])


# --- booleans as the API server reads them ---

def _node_yaml(spec: str) -> str:
    return (f"apiVersion: v1\nkind: Node\nmetadata: {{name: a}}\nspec:\n  {spec}\n"
            "status: {allocatable: {cpu: '4'}}\n")


@pytest.mark.parametrize(("written", "expected"), [("true", True), ("false", False), ("yes", True), ("on", True),
                                                    ("off", False), ("True", True), ("y", True), ("N", False)])
def test_yaml_booleans_read_as_booleans(tmp_path: Path, written: str, expected: bool) -> None:
    (tmp_path / "n.yaml").write_text(_node_yaml(f"unschedulable: {written}"))
    assert load_paths([str(tmp_path / "n.yaml")]).nodes[0].unschedulable is expected


@pytest.mark.parametrize("written", ['"false"', "'true'", '"no"', "0", "1", "[]", "'off'"])
def test_a_string_or_number_where_a_boolean_belongs_is_rejected(tmp_path: Path, written: str) -> None:
    (tmp_path / "n.yaml").write_text(_node_yaml(f"unschedulable: {written}"))
    with pytest.raises(InputError, match=r"Node a: spec\.unschedulable: must be true or false"):
        load_paths([str(tmp_path / "n.yaml")])


def test_global_default_and_owner_controller_take_booleans_only(tmp_path: Path) -> None:
    (tmp_path / "pc.yaml").write_text("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\n"
                                      "metadata: {name: pc}\nvalue: 1\nglobalDefault: 'false'\n")
    with pytest.raises(InputError, match="globalDefault: must be true or false"):
        load_paths([str(tmp_path / "pc.yaml")])
    (tmp_path / "pc.yaml").unlink()
    (tmp_path / "p.yaml").write_text(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  ownerReferences:\n  - {kind: Job, name: j, "
        "controller: 'false'}\nspec: {containers: [{name: c}]}\n")
    with pytest.raises(InputError, match=r"metadata.ownerReferences\[0\].controller: must be true or false"):
        load_paths([str(tmp_path / "p.yaml")])


# --- document order across files ---

def test_objects_of_one_instant_come_in_the_order_the_files_were_given(tmp_path: Path) -> None:
    """Document order is the command line's, not the paths' spelling: a file given first comes first even when
    its path sorts last (CI saw two files swap when the checkout's path sorted before the temporary folder's)."""
    late = write_manifests(tmp_path / "zz.yaml", MakePod("from-zz").req(cpu="1"))
    early = write_manifests(tmp_path / "aa.yaml", MakePod("from-aa").req(cpu="1"), NODE)
    inputs = load_paths([str(late), str(early)])
    assert [p.name for p in inputs.objects() if hasattr(p, "pod_group")] == ["from-zz", "from-aa"]
    inputs = load_paths([str(early), str(late)])
    assert [p.name for p in inputs.objects() if hasattr(p, "pod_group")] == ["from-aa", "from-zz"]
