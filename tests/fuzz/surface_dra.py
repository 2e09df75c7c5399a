"""Random DRA inputs, loaded and simulated for ten minutes under the default profile (DynamicResources on):
DeviceClasses and claims with CEL selectors (some of them costly), ResourceSlices of up to 128 devices (more
than one slice on a node, tainted devices, shared ones), claims and templates asking `count` devices from 0 to
huge or `allocationMode: All`, `firstAvailable` lists, `matchAttribute` constraints, tolerations, pods holding
one or several claims, and now and then a DeviceTaintRule."""

from __future__ import annotations

import os
import random
from typing import Any

import yaml

from phalanx.inputs.load import load_paths
from phalanx.scheduler.profiles import builtin
from phalanx.sim.simulation import Simulation
from tests import dra_builders as dra
from tests.fuzz.surface import INPUT_ERROR, OK, Surface, read_written, show_text

Doc = dict[str, Any]
HORIZON = 600.0
ATTR = f'device.attributes["{dra.DRIVER}"]'
_COUNTS = [0, -1, 33, 128, 129, 2**31, 2**63, 10**20, "2", 1.5, None]
_EFFECTS = ["NoSchedule", "NoExecute", "None"]


def _nested_all(depth: int) -> str:
    """A selector of `depth` nested `.all()` over ten numbers: 10**depth steps per device."""
    expression = "true"
    for level in range(depth):
        expression = f"[0,1,2,3,4,5,6,7,8,9].all(x{level}, {expression})"
    return expression


def _selector(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.05:
        return _nested_all(rng.choice([2, 3, 9]))  # 100 or 1,000 steps a device; 10**9 the API server refuses
    return rng.choice([
        f'device.driver == "{dra.DRIVER}"', f'{ATTR}.model == "H100"', f"{ATTR}.index >= {rng.randint(0, 8)}",
        f"{ATTR}.index % 2 == 0", f'{ATTR}.missing == "x"', "1 / 0 == 1", f"{ATTR}.numa in [0, 1]",
        "device.capacity['gpu.example.com'].memory.compareTo(quantity('40Gi')) >= 0",
    ])


def _device(name: str, index: int, rng: random.Random, tainted: bool) -> Doc:
    device = dra.gpu(name, index=index, model=rng.choice(["H100", "A100"]), numa=index % 2,
                     shared=rng.random() < 0.1, compute=rng.choice([None, "100", "1k"]))
    if tainted:
        device["taints"] = [{"key": "broken", "effect": rng.choice(_EFFECTS)}]
    return device


def _slices(node: str, rng: random.Random, large: bool) -> list[Doc]:
    count = 8 if large else rng.choice([1, 1, 2, 3])
    out = []
    for k in range(count):
        tainted = not large and rng.random() < 0.15
        size = 128 if large else rng.choice([0, 1, 2, 4, 8, 16])
        devices = [_device(f"gpu-{k}-{i}", i, rng, tainted and rng.random() < 0.5) for i in range(size)]
        piece = dra.gpu_slice(node, devices, pool=f"{node}-p{k}")
        piece["metadata"]["name"] = f"{node}-s{k}"
        out.append(piece)
    return out


def _exactly(rng: random.Random, class_name: str) -> Doc:
    mode = rng.random()
    count: Any = rng.choice([1, 1, 2, 4, 8, 32]) if rng.random() < 0.9 else rng.choice(_COUNTS)
    exact = dra.exactly(None if mode < 0.2 else count, mode="All" if mode < 0.2 else None,
                        selectors=[_selector(rng)] if rng.random() < 0.5 else None,
                        tolerations=[{"key": "broken", "operator": "Exists"}] if rng.random() < 0.2 else None,
                        device_class_name=class_name)
    return exact


def _claim_spec(rng: random.Random, classes: list[str]) -> Doc:
    requests = []
    for r in range(rng.choice([1, 1, 1, 2, 5])):
        if rng.random() < 0.15:
            alternatives = [dict(_exactly(rng, rng.choice(classes)), name=f"alt{a}") for a in range(rng.randint(1, 3))]
            requests.append(dra.request(f"r{r}", first_available=alternatives))
        else:
            requests.append(dra.request(f"r{r}", _exactly(rng, rng.choice(classes))))
    constraints = [{"matchAttribute": f"{dra.DRIVER}/numa"}] if rng.random() < 0.15 else None
    return dra.claim_spec(*requests, constraints=constraints)


def objects(rng: random.Random) -> list[Doc]:
    """Nodes with slices, classes, claims and templates, pods that use them, maybe a taint rule."""
    nodes = [f"n{i}" for i in range(rng.randint(1, 2))]
    large = rng.random() < 0.02  # now and then a node as the campaign's: 8 slices of 128 devices
    docs: list[Doc] = []
    for i, node in enumerate(nodes):
        docs += [dra.node(node, cpu="16"), *_slices(node, rng, large and i == 0)]
    classes = [f"class-{c}" for c in range(rng.randint(1, 3))]
    docs += [dra.device_class(name, _selector(rng)) for name in classes]
    claims = [f"claim-{c}" for c in range(rng.randint(0, 3))]
    docs += [dra.claim(name, _claim_spec(rng, classes)) for name in claims]
    if large:  # and the campaign's claim: every device of the driver
        docs.append(dra.device_class("class-every"))
        docs.append(dra.claim("claim-every", dra.claim_spec(dra.request(
            "every", dra.exactly(None, mode="All", device_class_name="class-every")))))
        docs.append(dra.pod("p-every", claim_name="claim-every"))
    templates = [f"tpl-{t}" for t in range(rng.randint(0, 2))]
    docs += [dra.template(name, _claim_spec(rng, classes)) for name in templates]
    named = [*claims, *templates, *(["claim-missing"] if rng.random() < 0.05 else [])]
    for p in range(rng.randint(1, 5)):
        refs = [{"name": f"ref{i}", **({"resourceClaimName": ref} if ref.startswith("claim") else
                                       {"resourceClaimTemplateName": ref})}
                for i, ref in enumerate(rng.sample(named, k=rng.randint(0, min(2, len(named)))))]
        docs.append(dra.pod(f"p{p}", claims=refs, arrival=f"{rng.randint(0, 30)}s", duration=f"{rng.randint(1, 200)}s"))
    if rng.random() < 0.2:
        docs.append(dra.taint_rule("rule", "broken", rng.choice(_EFFECTS), arrival=f"{rng.randint(0, 60)}s"))
    return docs


def _generate(rng: random.Random) -> str:
    return yaml.safe_dump_all(objects(rng), sort_keys=False)


def _run(text: str, directory: str) -> str:
    inputs = read_written(text, os.path.join(directory, "dra.yaml"), load_paths)
    if inputs is None:
        return INPUT_ERROR
    Simulation(inputs, builtin("default"), until=HORIZON).run()
    return OK


SURFACE = Surface("dra", _generate, _run, show_text,
                  "DeviceClasses, ResourceSlices, claims (count 0..huge, All, firstAvailable, constraints, CEL, "
                  "tolerations), pods, taint rules; simulated 10 minutes under the default profile")
