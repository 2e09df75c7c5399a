"""DRA objects: parsing the v1 shapes (and v1beta1/v1beta2), validation errors naming file, object and field,
and the device toleration rules (KEP-5055)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from phalanx.api.dra import DeviceTaint, DeviceToleration, compile_selector
from phalanx.cli import main
from phalanx.errors import InputError
from tests import dra_builders as b


def test_v1_objects_parse_with_qualified_attributes_and_milli_capacities(tmp_path: Path) -> None:
    inputs = b.load(tmp_path, b.device_class(), b.node("n0"), b.gpus("n0", 2),
                    b.template("one", b.claim_spec(b.request("gpu", b.exactly(2)))),
                    b.pod("p", template_name="one"))
    (slice_,) = inputs.resource_slices
    device = slice_.devices[1]
    assert device.attributes["gpu.example.com/index"] == 1
    assert device.capacity["gpu.example.com/memory"].value == 80 * 2**30 * 1000
    assert inputs.claim_templates[0].spec.requests[0].exactly is not None
    assert inputs.claim_templates[0].spec.requests[0].exactly.count == 2
    assert inputs.pods[0].resource_claims[0].template_name == "one"


def test_v1beta1_shapes_map_onto_the_same_objects(tmp_path: Path) -> None:
    beta_slice = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice", "metadata": {"name": "s"},
                  "spec": {"driver": b.DRIVER, "pool": {"name": "p"}, "nodeName": "n0",
                           "devices": [{"name": "gpu-0", "basic": {"attributes": {"model": {"string": "A"}},
                                                                   "capacity": {"memory": "16Gi"}}}]}}
    beta_claim = {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceClaim",
                  "metadata": {"name": "c"},
                  "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": b.DRIVER, "count": 2}]}}}
    inputs = b.load(tmp_path, b.device_class(), b.node("n0"), beta_slice, beta_claim)
    assert inputs.resource_slices[0].devices[0].capacity["gpu.example.com/memory"].value == 16 * 2**30 * 1000
    exact = inputs.resource_claims[0].spec.requests[0].exactly
    assert exact is not None and exact.count == 2 and exact.device_class_name == b.DRIVER


def test_v1_request_with_the_v1beta1_field_is_rejected(tmp_path: Path) -> None:
    bad = b.claim("c", {"devices": {"requests": [{"name": "gpu", "deviceClassName": b.DRIVER}]}})
    with pytest.raises(InputError, match=r"ResourceClaim default/c: spec.devices.requests\[0\].deviceClassName"):
        b.load(tmp_path, b.device_class(), bad)


def test_unknown_device_class_names_file_object_and_field(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        b.load(tmp_path, b.device_class(), b.template("t", b.claim_spec(
            b.request("gpu", b.exactly(1, device_class_name="tpu.example.com")))))
    message = str(err.value)
    assert "input.yaml: ResourceClaimTemplate default/t: spec.spec.devices.requests[0].exactly.deviceClassName" \
        in message
    assert "no DeviceClass named 'tpu.example.com'" in message


def test_cel_that_does_not_compile_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        b.load(tmp_path, b.device_class(expression='device.driver == "x" &&'))
    assert "DeviceClass gpu.example.com: spec.selectors[0].cel.expression: CEL expression does not compile" \
        in str(err.value)


def test_cel_in_a_request_is_checked_too(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"requests\[0\].exactly.selectors\[0\].cel.expression"):
        b.load(tmp_path, b.device_class(), b.claim("c", b.claim_spec(b.request("gpu", b.exactly(1, selectors=["(("])))))


def test_missing_claim_template_and_claim(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"Pod default/p: spec.resourceClaims\[0\].resourceClaimTemplateName: "
                                         r"no ResourceClaimTemplate named 'nope'"):
        b.load(tmp_path, b.device_class(), b.pod("p", template_name="nope"))
    with pytest.raises(InputError, match=r"spec.resourceClaims\[0\].resourceClaimName: no ResourceClaim named 'c'"):
        b.load(tmp_path, b.device_class(), b.pod("p", claim_name="c"))


def test_cli_reports_bad_dra_input_in_one_line_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b.load(tmp_path, b.device_class())  # writes input.yaml; now break it
    (tmp_path / "input.yaml").write_text((tmp_path / "input.yaml").read_text().replace("==", "=== ("))
    assert main(["validate", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "cel.expression" in err


@pytest.mark.parametrize(("raw", "field"), [
    ({"key": "k", "operator": "Exists", "value": "v"}, "value"),
    ({"operator": "Equal"}, "operator"),
    ({"key": "k", "effect": "PreferNoSchedule"}, "effect"),
    ({"key": "k", "effect": "NoSchedule", "tolerationSeconds": 5}, "tolerationSeconds"),
])
def test_bad_tolerations(tmp_path: Path, raw: dict[str, object], field: str) -> None:
    spec = b.claim_spec(b.request("gpu", b.exactly(1, tolerations=[raw])))
    with pytest.raises(InputError, match=rf"tolerations\[0\].{field}"):
        b.load(tmp_path, b.device_class(), b.claim("c", spec))


def test_taint_rule_versions_and_effects(tmp_path: Path) -> None:
    inputs = b.load(tmp_path, b.taint_rule("r", "k", "NoExecute", device="gpu-0", arrival="2h", version="v1alpha3"))
    rule = inputs.device_taint_rules[0]
    assert rule.taint == DeviceTaint("k", "", "NoExecute", 7200.0)
    assert rule.arrival == 7200.0 and rule.selector.device == "gpu-0"
    with pytest.raises(InputError, match=r"spec\.taint\.effect: unsupported value 'PreferNoSchedule'"):
        b.load(tmp_path, b.taint_rule("r", "k", "PreferNoSchedule"))


TAINT = DeviceTaint("gpu.example.com/ecc", "bad", "NoSchedule")


@pytest.mark.parametrize(("toleration", "tolerates"), [
    (DeviceToleration("gpu.example.com/ecc", "Equal", "bad", "NoSchedule"), True),
    (DeviceToleration("gpu.example.com/ecc", "Equal", "good", "NoSchedule"), False),
    (DeviceToleration("gpu.example.com/ecc", "Exists", "", "NoSchedule"), True),
    (DeviceToleration("gpu.example.com/ecc", "Exists", "", ""), True),  # empty effect: every effect
    (DeviceToleration("gpu.example.com/ecc", "Exists", "", "NoExecute"), False),  # NoExecute ≠ NoSchedule
    (DeviceToleration("", "Exists", "", ""), True),  # empty key with Exists: every taint
    (DeviceToleration("", "Exists", "", "NoExecute"), False),
    (DeviceToleration("other", "Exists", "", ""), False),
    (DeviceToleration("gpu.example.com/ecc", "Equal", "bad", ""), True),
])
def test_toleration_matching(toleration: DeviceToleration, tolerates: bool) -> None:
    assert toleration.tolerates(TAINT) is tolerates


def test_selectors_compile_once() -> None:
    assert compile_selector('device.driver == "a"') is compile_selector('device.driver == "a"')


# --- what the API server lets a device hold: the bounds the CEL cost estimate counts on ---

@pytest.mark.parametrize(("change", "match"), [
    (lambda d: d["attributes"].update({f"a{i}": {"int": i} for i in range(30)}),
     r"spec.devices\[0\]: Invalid value: 34: the total number of attributes and capacities must not exceed 32"),
    (lambda d: d["attributes"].update(model={"string": "x" * 65}),
     r"spec.devices\[0\].attributes.model.string: Too long: may not be more than 64 bytes"),
    (lambda d: d["attributes"].update({"x" * 33: {"int": 1}}),
     r"spec.devices\[0\].attributes: Too long: may not be more than 32 bytes"),
    (lambda d: d["attributes"].update({"model-name": {"string": "a"}}),
     r'spec.devices\[0\].attributes: Invalid value: "model-name": a valid C identifier'),
    (lambda d: d["capacity"].update({("d" * 64) + "/mem": {"value": "1"}}),
     r"spec.devices\[0\].capacity: Too long: may not be more than 63 bytes"),
])
def test_devices_within_the_api_servers_limits(tmp_path: Path, change: Any, match: str) -> None:
    device = b.gpu("gpu-0")
    change(device)
    with pytest.raises(InputError, match=r"ResourceSlice n-gpus: " + match):
        b.load(tmp_path, b.node("n"), b.gpu_slice("n", [device]))


def test_a_driver_name_is_a_dns_subdomain_of_63_characters(tmp_path: Path) -> None:
    piece = b.gpu_slice("n", [b.gpu("gpu-0")])
    piece["spec"]["driver"] = "g" * 64 + ".example.com"
    with pytest.raises(InputError, match=r"spec\.driver: Too long: may not be more than 63 bytes"):
        b.load(tmp_path, b.node("n"), piece)
