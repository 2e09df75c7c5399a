"""Names, labels and int32 counts the API server rejects are rejected at load, in its words, naming the file, the
object and the field (the campaign found them accepted: a name with a lone surrogate, minCount 2^31)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from phalanx import InputError, load_paths
from phalanx.api.names import label_problem, label_value_problem, qualified_name_problem, subdomain_problem
from tests.builders import MakeJob, MakeNode, MakePod, MakePodGroup, MakeWorkload, write_manifests

SUBDOMAIN_RULE = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'"


@pytest.mark.parametrize("name", ["a", "web-1", "0", "example.com", "a" * 253, "x.y-z.0"])
def test_subdomains_the_api_server_takes(name: str) -> None:
    assert subdomain_problem(name) is None


@pytest.mark.parametrize(("name", "problem"), [
    ("Web", SUBDOMAIN_RULE), ("web_1", SUBDOMAIN_RULE), ("-web", SUBDOMAIN_RULE), ("web.", SUBDOMAIN_RULE),
    ("a..b", SUBDOMAIN_RULE), ("", SUBDOMAIN_RULE), ("web\udcff", SUBDOMAIN_RULE), ("wéb", SUBDOMAIN_RULE),
    ("web\n", SUBDOMAIN_RULE), ("a" * 254, "must be no more than 253 characters"),
])
def test_subdomains_the_api_server_rejects(name: str, problem: str) -> None:
    assert (subdomain_problem(name) or "").startswith(problem)


def test_dns_labels() -> None:
    assert label_problem("default") is None and label_problem("a" * 63) is None
    assert (label_problem("kube.system") or "").startswith("a lowercase RFC 1123 label must consist")
    assert label_problem("a" * 64) == "must be no more than 63 characters"


@pytest.mark.parametrize(("key", "problem"), [
    ("app", None), ("App_Name.v1", None), ("example.com/tier", None), ("kubernetes.io/hostname", None),
    ("a" * 63, None), ("bad key", "name part must consist of"), ("a" * 64, "name part must be no more than 63"),
    ("/x", "prefix part must be non-empty"), ("x/", "name part must be non-empty"),
    ("Example.com/x", "prefix part a lowercase RFC 1123 subdomain"), ("a/b/c", "a qualified name must consist"),
])
def test_qualified_names(key: str, problem: str | None) -> None:
    found = qualified_name_problem(key)
    assert found is None if problem is None else (found or "").startswith(problem)


@pytest.mark.parametrize(("value", "ok"), [("", True), ("v1.2_x-y", True), ("a" * 63, True), ("a" * 64, False),
                                           ("-a", False), ("a b", False), ("é", False)])
def test_label_values(value: str, ok: bool) -> None:
    assert (label_value_problem(value) is None) == ok


# --- at load: file, object, field, the API server's words ---

def load_fails(tmp_path: Path, *builders: Any, match: str) -> None:
    path = write_manifests(tmp_path / "in.yaml", *builders)
    with pytest.raises(InputError, match=match):
        load_paths([str(path)])


def test_a_pod_name_the_api_server_rejects(tmp_path: Path) -> None:
    load_fails(tmp_path, MakePod("Web_1", "shop").req(cpu="1"),
               match=r'in.yaml: Pod shop/Web_1: metadata.name: Invalid value: "Web_1": a lowercase RFC 1123 '
                     "subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and "
                     "end with an alphanumeric character$")


def test_a_lone_surrogate_in_a_json_name_is_rejected_not_carried_to_the_output(tmp_path: Path) -> None:
    path = tmp_path / "pods.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web\udcff"},
                                "spec": {"containers": [{"name": "c"}]}}))
    with pytest.raises(InputError, match=r'metadata.name: Invalid value: "web\udcff": a lowercase RFC 1123'):
        load_paths([str(path)])


@pytest.mark.parametrize(("change", "field", "problem"), [
    (lambda b: b.namespace("Team_A"), "metadata.namespace", "a lowercase RFC 1123 label must consist"),
    (lambda b: b.namespace("a" * 64), "metadata.namespace", "must be no more than 63 characters"),
    (lambda b: b.name("a" * 254), "metadata.name", "must be no more than 253 characters"),
    (lambda b: b.label("bad key", "x"), "metadata.labels", '"bad key": name part must consist'),
    (lambda b: b.label("app", "x" * 64), "metadata.labels", "must be no more than 63 characters"),
    (lambda b: b.annotation("a/b/c", "anything goes in a value"), "metadata.annotations", "a qualified name"),
    (lambda b: b.node_selector(zone="eu west"), "spec.nodeSelector", "a valid label must be an empty string"),
    (lambda b: b.group("Workers"), "spec.schedulingGroup.podGroupName", "a lowercase RFC 1123 subdomain"),
    (lambda b: b.node("Node_A"), "spec.nodeName", "a lowercase RFC 1123 subdomain"),
])
def test_pod_metadata_and_references(tmp_path: Path, change: Callable[[MakePod], Any], field: str,
                                     problem: str) -> None:
    pod = MakePod("web", "shop").req(cpu="1")
    change(pod)
    load_fails(tmp_path, MakeNode("node-a").alloc(cpu="4"), pod, match=f"Pod .*: {field}: Invalid value: .*{problem}")


def test_annotation_values_and_uppercase_keys_are_free_text(tmp_path: Path) -> None:
    """ValidateAnnotations checks keys lowercased and leaves values alone."""
    pod = MakePod("web", "shop").req(cpu="1").annotation("Example.COM/Note", "any text: {[<>]} é")
    load_paths([str(write_manifests(tmp_path / "in.yaml", pod))])


INT32 = 2**31


@pytest.mark.parametrize(("builder", "field"), [
    (lambda: MakePodGroup("workers", "batch").gang(INT32),
     "PodGroup batch/workers: spec.schedulingPolicy.gang.minCount"),
    (lambda: MakeJob("train", "batch").gang(INT32).req(cpu="1"),
     "Job batch/train: spec.scheduling.schedulingPolicy.gang.minCount"),
])
def test_min_count_is_an_int32(tmp_path: Path, builder: Callable[[], Any], field: str) -> None:
    load_fails(tmp_path, builder(), match=f"{field}: must be at most 2147483647, got 2147483648")
    load_paths([str(write_manifests(tmp_path / "ok.yaml", MakePodGroup("g", "batch").gang(INT32 - 1)))])


def test_a_workload_templates_min_count_is_an_int32(tmp_path: Path) -> None:
    workload = MakeWorkload("wl", "batch").template("workers", gang=INT32)
    load_fails(tmp_path, workload, match=r"Workload batch/wl: spec.podGroupTemplates\[0\].schedulingPolicy.gang."
                                         "minCount: must be at most 2147483647")


def test_a_pdb_count_is_an_int32(tmp_path: Path) -> None:
    path = tmp_path / "pdb.yaml"
    path.write_text("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: d}\n"
                    f"spec: {{minAvailable: {INT32}, selector: {{}}}}\n")
    with pytest.raises(InputError, match=r"PodDisruptionBudget d: spec.minAvailable: must be at most 2147483647"):
        load_paths([str(path)])


def test_node_taints_are_validated_as_labels(tmp_path: Path) -> None:
    load_fails(tmp_path, MakeNode("node-a").alloc(cpu="4").taint("gpu type", "true"),
               match=r'Node node-a: spec.taints\[0\].key: Invalid value: "gpu type"')


def test_cron_job_names_leave_room_for_their_jobs(tmp_path: Path) -> None:
    path = tmp_path / "cron.yaml"
    text = ("apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: NAME}\nspec:\n  schedule: '*/5 * * * *'\n"
            "  jobTemplate: {spec: {template: {spec: {containers: [{name: c}]}}}}\n")
    path.write_text(text.replace("NAME", "c" * 53))
    with pytest.raises(InputError, match=r"CronJob c+: metadata.name: Invalid value: .*must be no more than 52"):
        load_paths([str(path)])
    path.write_text(text.replace("NAME", "c" * 52))
    load_paths([str(path)])


def test_a_job_sets_replicated_job_names_a_dns_label(tmp_path: Path) -> None:
    path = tmp_path / "js.yaml"
    path.write_text("apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: js}\nspec:\n"
                    "  replicatedJobs:\n  - name: Workers\n    template: {spec: {template: {spec: "
                    "{containers: [{name: c}]}}}}\n")
    with pytest.raises(InputError, match=r"JobSet js: spec.replicatedJobs\[0\].name: Invalid value: "
                                         '"Workers": a lowercase RFC 1123 label'):
        load_paths([str(path)])
