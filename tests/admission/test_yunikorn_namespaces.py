"""The Namespace annotations YuniKorn applies to a dynamic queue (phalanx/admission/yunikorn_namespaces.py), read
as yunikorn-k8shim `pkg/common/utils/utils.go` reads them."""

from __future__ import annotations

from typing import Any

from phalanx.admission.yunikorn_namespaces import NamespaceTags, read_namespaces


def _ns(name: str, **annotations: str) -> dict[str, Any]:
    return {"kind": "Namespace", "metadata": {"name": name, "annotations": {
        f"yunikorn.apache.org/namespace.{k.replace('_', '.')}": v for k, v in annotations.items()}}}


def test_quota_guaranteed_and_max_apps() -> None:
    tags, warnings = read_namespaces([_ns("ml", quota='{"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "1"}',
                                          guaranteed='{"cpu": "500m"}', maxApps="3")])
    assert tags == {"ml": NamespaceTags({"vcore": 2000, "memory": 4 * 2**30, "nvidia.com/gpu": 1}, {"vcore": 500}, 3)}
    assert warnings == []


def test_quota_wins_over_the_deprecated_max_annotations() -> None:
    """GetNamespaceQuotaFromAnnotation: namespace.quota first, namespace.max.cpu and .memory only without it."""
    both, _ = read_namespaces([_ns("a", quota='{"cpu": "1"}', max_cpu="4")])
    old, _ = read_namespaces([_ns("b", max_cpu="4", max_memory="1G")])
    assert both["a"].maximum == {"vcore": 1000}
    assert old["b"].maximum == {"vcore": 4000, "memory": 10**9}


def test_unreadable_values_are_ignored_and_named() -> None:
    tags, warnings = read_namespaces([_ns("x", quota="[1]", guaranteed='{"cpu": "lots"}', maxApps="two")])
    assert tags["x"] == NamespaceTags(None, None, 0)
    assert len(warnings) == 3 and all(w.startswith("Namespace x: annotation yunikorn.apache.org/namespace.")
                                      for w in warnings)


def test_namespaces_without_yunikorn_annotations_set_nothing() -> None:
    assert read_namespaces([{"kind": "Namespace", "metadata": {"name": "plain", "labels": {"a": "b"}}}]) == ({}, [])
