"""A new workload controller is its own module plus two lines: its kind's entry in phalanx/api/kinds.py and its
controller in phalanx/controllers/registry.py. Here a made-up kind, `example.com/v1 Widget` (N pods from a
template), is registered at test time by exactly those two and simulated end to end through `phalanx simulate`."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from phalanx.api.fields import Manifest, Meta, integer, mapping, template_meta
from phalanx.api.kinds import KINDS, Kind
from phalanx.api.objects import Pod, Source
from phalanx.api.parse import pod_from_spec
from phalanx.cli import main
from phalanx.controllers import registry
from phalanx.controllers.protocol import Actions, Controller, Given
from phalanx.inputs.load import load_paths
from tests.builders import MakeNode, write_manifests


@dataclass(slots=True)
class Widget:
    namespace: str
    name: str
    replicas: int
    template: Pod
    arrival: float = 0.0
    source: Source | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def pod_templates(self) -> list[tuple[Pod, str]]:
        return [(self.template, "spec.template.spec")]


def parse_widget(doc: Manifest, source: Source) -> Widget:
    meta = Meta(doc, namespaced=True)
    spec = mapping(doc.get("spec"), "spec", required=True)
    template = mapping(spec.get("template"), "spec.template", required=True)
    pod = pod_from_spec(template_meta(template, meta, "spec.template"),
                        mapping(template.get("spec"), "spec.template.spec", required=True), "spec.template.spec",
                        source)
    return Widget(meta.namespace, meta.name, integer(spec.get("replicas"), "spec.replicas", minimum=0), pod,
                  meta.arrival, source)


@dataclass(slots=True)
class WidgetController(Controller):
    kinds: ClassVar[tuple[type[Any], ...]] = (Widget,)

    def arrive(self, obj: Widget, now: float, given: Given) -> Actions:
        return Actions(pods=[self._pod(obj, i, now) for i in range(obj.replicas)])

    @staticmethod
    def _pod(widget: Widget, index: int, now: float) -> Pod:
        return dataclasses.replace(widget.template, name=f"{widget.name}-{index}", namespace=widget.namespace,
                                   arrival=now, owner=widget.key, controller="Widget", node_name=None,
                                   start_time=None, source=widget.source)


def widget(name: str, replicas: int, cpu: str, duration: str) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name},
            "spec": {"replicas": replicas, "template": {
                "metadata": {"labels": {"app": name}, "annotations": {"phalanx.dev/duration": duration}},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}}}}


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The two lines a new controller adds, made at test time."""
    monkeypatch.setitem(KINDS, "Widget", Kind(("example.com/v1",), parse_widget, Widget))
    monkeypatch.setattr(registry, "CONTROLLERS", (*registry.CONTROLLERS, WidgetController))


def test_an_unregistered_kind_is_skipped(tmp_path: Path) -> None:
    inputs = load_paths([str(write_manifests(tmp_path / "in.yaml", widget("w", 3, "1", "60s")))])
    assert inputs.skipped["Widget"] == 1 and inputs.controllers() == []


def test_a_registered_controller_is_filed_and_simulated_end_to_end(
        registered: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_manifests(tmp_path / "in.yaml", MakeNode("node-a").alloc(cpu="2", memory="4Gi"),
                           widget("w", 3, "1", "60s"))
    inputs = load_paths([str(path)])
    assert [w.key for w in inputs.of(Widget)] == ["default/w"] and not inputs.skipped

    assert main(["simulate", str(path), "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert "skipped" not in err
    report = json.loads(out)
    # Two fit at once on the node's 2 CPUs; the third runs when one of them is done.
    assert report["summary"]["pods"] == {"total": 3, "running": 0, "pending": 0, "succeeded": 3, "failed": 0}
    pods = {p["name"]: p for p in report["pods"]}
    assert sorted(pods) == ["default/w-0", "default/w-1", "default/w-2"]
    assert {p["node"] for p in pods.values()} == {"node-a"}
    assert report["endTime"] == 120.0
