"""Node groups read from template Node manifests (phalanx/autoscale/nodegroups.py)."""

from __future__ import annotations

from typing import Any

import pytest

from phalanx.api.objects import Source
from phalanx.autoscale.nodegroups import (
    COST_ANNOTATION,
    DEFAULT_PROVISIONING_DELAY,
    MAX_GROUP_SIZE,
    MAX_SIZE_ANNOTATION,
    MIN_SIZE_ANNOTATION,
    NODE_GROUP_ANNOTATION,
    NODE_GROUP_LABEL,
    PROVISIONING_DELAY_ANNOTATION,
    NodeGroup,
    group_of,
    index_node_groups,
    node_groups_from,
    parse_node_group,
)
from phalanx.errors import InputError
from tests.builders import MakeNode

SOURCE = Source("groups.yaml", 0)


def template(name: str = "tpl-cpu", **annotations: str) -> MakeNode:
    node = MakeNode(name).alloc(cpu="8", memory="32Gi").label("pool", "cpu")
    for key, value in annotations.items():
        node.annotation(key, value)
    return node


def group_doc(**overrides: str | None) -> dict[str, Any]:
    annotations: dict[str, str | None] = {NODE_GROUP_ANNOTATION: "cpu", MIN_SIZE_ANNOTATION: "1",
                                          MAX_SIZE_ANNOTATION: "10"}
    annotations.update(overrides)
    return template(**{k: v for k, v in annotations.items() if v is not None}).manifest()


def parse(doc: dict[str, Any]) -> NodeGroup:
    group = parse_node_group(doc, SOURCE)
    assert group is not None
    return group


def test_nodegroup_parses_every_annotation() -> None:
    """The sizes use cluster-autoscaler's Cluster API provider annotations
    (cluster-autoscaler/cloudprovider/clusterapi/README.md, "Enabling Autoscaling":
    `cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size` / `-max-size`)."""
    group = parse(group_doc(**{MIN_SIZE_ANNOTATION: "2", MAX_SIZE_ANNOTATION: "7",
                               PROVISIONING_DELAY_ANNOTATION: "90s", COST_ANNOTATION: "0.75"}))
    assert (group.name, group.min_size, group.max_size) == ("cpu", 2, 7)
    assert group.provisioning_delay == 90.0
    assert group.cost_per_hour == 0.75
    assert group.template.allocatable["cpu"] == 8000
    assert group.template.labels == {"pool": "cpu"}


def test_nodegroup_defaults() -> None:
    group = parse(template(**{NODE_GROUP_ANNOTATION: "cpu", MAX_SIZE_ANNOTATION: "3"}).manifest())
    assert group.min_size == 0
    assert group.provisioning_delay == DEFAULT_PROVISIONING_DELAY == 120.0
    assert group.cost_per_hour == 0.0
    assert group.initial_nodes() == []


def test_nodegroup_plain_node_is_not_a_template() -> None:
    assert parse_node_group(MakeNode("n1").alloc(cpu="4").manifest(), SOURCE) is None


def test_nodegroup_initial_nodes_are_named_copies_of_the_template() -> None:
    doc = group_doc(**{MIN_SIZE_ANNOTATION: "3"})
    doc["metadata"]["labels"]["kubernetes.io/hostname"] = "tpl-cpu"
    group = parse(doc)
    nodes = group.initial_nodes()
    assert [n.name for n in nodes] == ["cpu-0", "cpu-1", "cpu-2"]
    assert all(group_of(n) == "cpu" and n.labels[NODE_GROUP_LABEL] == "cpu" for n in nodes)
    assert nodes[1].labels["kubernetes.io/hostname"] == "cpu-1"
    assert nodes[0].allocatable == group.template.allocatable
    assert nodes[0].allocatable is not group.template.allocatable
    assert "kubernetes.io/hostname" in group.template.labels and NODE_GROUP_LABEL not in group.template.labels
    late = group.new_node(7, arrival=300.0)
    assert (late.name, late.arrival) == ("cpu-7", 300.0)


@pytest.mark.parametrize(("overrides", "field", "words"), [
    ({MIN_SIZE_ANNOTATION: "5", MAX_SIZE_ANNOTATION: "2"}, MIN_SIZE_ANNOTATION, "larger than max-size"),
    ({MIN_SIZE_ANNOTATION: "-1"}, MIN_SIZE_ANNOTATION, "must not be negative"),
    ({MAX_SIZE_ANNOTATION: "-3"}, MAX_SIZE_ANNOTATION, "must not be negative"),
    ({MAX_SIZE_ANNOTATION: "five"}, MAX_SIZE_ANNOTATION, "whole number"),
    ({MIN_SIZE_ANNOTATION: "1.5"}, MIN_SIZE_ANNOTATION, "whole number"),
    ({MIN_SIZE_ANNOTATION: "+-5"}, MIN_SIZE_ANNOTATION, "whole number"),
    ({MAX_SIZE_ANNOTATION: "--5"}, MAX_SIZE_ANNOTATION, "whole number"),
    ({MAX_SIZE_ANNOTATION: " 5"}, MAX_SIZE_ANNOTATION, "whole number"),  # strconv.Atoi takes no spaces
    ({MAX_SIZE_ANNOTATION: "\u0665"}, MAX_SIZE_ANNOTATION, "whole number"),  # an Arabic-Indic 5
    ({MAX_SIZE_ANNOTATION: "\u00b2"}, MAX_SIZE_ANNOTATION, "whole number"),  # isdigit() says yes, int() no
    ({MAX_SIZE_ANNOTATION: "9" * 5000}, MAX_SIZE_ANNOTATION, "out of range"),
    ({MIN_SIZE_ANNOTATION: "-" + "9" * 5000}, MIN_SIZE_ANNOTATION, "out of range"),
    ({MIN_SIZE_ANNOTATION: "100000000", MAX_SIZE_ANNOTATION: "100000000"}, MIN_SIZE_ANNOTATION,
     "more than 5000, the most nodes Kubernetes supports"),
    ({MAX_SIZE_ANNOTATION: None}, MAX_SIZE_ANNOTATION, "is required"),
    ({PROVISIONING_DELAY_ANNOTATION: "soon"}, PROVISIONING_DELAY_ANNOTATION, "invalid duration"),
    ({PROVISIONING_DELAY_ANNOTATION: "-5s"}, PROVISIONING_DELAY_ANNOTATION, "invalid duration"),
    ({COST_ANNOTATION: "cheap"}, COST_ANNOTATION, "non-negative decimal"),
    ({COST_ANNOTATION: "-1"}, COST_ANNOTATION, "non-negative decimal"),
    ({COST_ANNOTATION: "inf"}, COST_ANNOTATION, "non-negative decimal"),
    ({NODE_GROUP_ANNOTATION: ""}, NODE_GROUP_ANNOTATION, "empty"),
    ({NODE_GROUP_ANNOTATION: "GPU_pool"}, NODE_GROUP_ANNOTATION, "DNS label"),
    ({NODE_GROUP_ANNOTATION: None}, NODE_GROUP_ANNOTATION, "is required with"),
])
def test_nodegroup_bad_input_is_one_line_naming_the_field(overrides: dict[str, str | None], field: str,
                                                          words: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_node_group(group_doc(**overrides), SOURCE)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"groups.yaml: Node tpl-cpu: metadata.annotations[{field}]: ")
    assert words in message


def test_nodegroup_bad_sizes_fit_one_short_line() -> None:
    with pytest.raises(InputError) as caught:
        parse_node_group(group_doc(**{MAX_SIZE_ANNOTATION: "9" * 5000}), SOURCE)
    assert len(str(caught.value)) < 300


@pytest.mark.parametrize(("raw", "size"), [("+5", 5), ("-0", 0), ("0" * 5000 + "7", 7)])
def test_nodegroup_sizes_read_as_strconv_atoi(raw: str, size: int) -> None:
    """The Cluster API provider reads the sizes with strconv.Atoi: a sign, then ASCII digits of any length
    within int64 (leading zeros too)."""
    assert parse(group_doc(**{MIN_SIZE_ANNOTATION: raw, MAX_SIZE_ANNOTATION: "10"})).min_size == size


def test_nodegroup_max_size_above_the_cap_is_capped() -> None:
    group = parse(group_doc(**{MAX_SIZE_ANNOTATION: "100000000"}))
    assert (group.max_size, group.max_size_given) == (MAX_GROUP_SIZE, 100_000_000)
    assert parse(group_doc(**{MAX_SIZE_ANNOTATION: str(MAX_GROUP_SIZE)})).max_size_given is None


def test_nodegroup_bad_node_fields_are_located_too() -> None:
    doc = group_doc()
    doc["status"]["allocatable"]["cpu"] = "lots"
    with pytest.raises(InputError, match=r"^groups.yaml: Node tpl-cpu: status.allocatable.cpu: "):
        parse_node_group(doc, SOURCE)


def test_nodegroup_duplicate_names_are_refused() -> None:
    first = parse(group_doc())
    second = parse_node_group(template("tpl-cpu-2", **{NODE_GROUP_ANNOTATION: "cpu",
                                                       MAX_SIZE_ANNOTATION: "1"}).manifest(), Source("b.yaml", 0))
    assert second is not None
    with pytest.raises(InputError, match=r"duplicate node group 'cpu' \(first defined in groups.yaml\)"):
        index_node_groups([first, second])


def test_nodegroup_split_from_other_manifests() -> None:
    docs = [(group_doc(), SOURCE), (MakeNode("n1").alloc(cpu="4").manifest(), SOURCE),
            ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}, SOURCE)]
    groups, rest = node_groups_from(docs)
    assert list(groups) == ["cpu"]
    assert [doc["metadata"]["name"] for doc, _ in rest] == ["n1", "p"]
