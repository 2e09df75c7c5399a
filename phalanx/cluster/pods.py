"""Bound pods by namespace and labels, for the scheduling rules between pods (PodTopologySpread, InterPodAffinity).

Pods made from one template share a namespace and labels: a *signature*. Every bound pod holds a slot with
its node, its signature and whether it is terminating, so counting on every node the pods a selector matches
is one test per signature (remembered per selector) and one np.bincount over the slots. Pods that carry pod
(anti-)affinity terms are also counted per distinct term, node by node, for the rules that existing pods
impose on an incoming one (kube-scheduler's symmetric checks).

ClusterState builds the index on first use from its bound pods and keeps it up to date on assume and forget
from then on, so clusters whose pods never use these rules never pay for it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterator
from typing import Literal

import numpy as np
import numpy.typing as npt

from phalanx.api.host_ports import HostPort
from phalanx.api.objects import Pod, PodAffinityTerm

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
TermKind = Literal["required", "required_anti", "preferred", "preferred_anti"]
# A term some bound pods carry: its kind, its weight (1 for required terms) and the term.
TermKey = tuple[TermKind, int, PodAffinityTerm]
Matcher = Callable[[str, dict[str, str]], bool]
_MAX_MATCHERS = 512


def _pod_terms(pod: Pod) -> Iterator[TermKey]:
    affinity = pod.placement.pod_affinity
    if affinity is None:
        return
    for term in affinity.required:
        yield "required", 1, term
    for term in affinity.required_anti:
        yield "required_anti", 1, term
    for weighted in affinity.preferred:
        yield "preferred", weighted.weight, weighted.term
    for weighted in affinity.preferred_anti:
        yield "preferred_anti", weighted.weight, weighted.term


class PodIndex:
    """Bound pods as slots (node, signature, terminating) and the pod-affinity terms they carry, per node."""

    def __init__(self) -> None:
        self._slot: dict[str, int] = {}
        self._free: list[int] = []
        self._top = 0  # slots in use lie below this mark
        self._node: IntArray = np.zeros(64, dtype=np.int64)
        self._sig: IntArray = np.zeros(64, dtype=np.int64)
        self._alive: BoolArray = np.zeros(64, dtype=bool)
        self._terminating: BoolArray = np.zeros(64, dtype=bool)
        self._sig_ids: dict[tuple[str, frozenset[tuple[str, str]]], int] = {}
        self._last: tuple[Pod, dict[str, str], str, int] | None = None
        # Per-node counts of the pods a selector matches (`counts`), kept up to date as pods come and go once
        # asked for: (key, skip_terminating) -> counts; and per signature the counters it adds to.
        self._counters: dict[tuple[Hashable, bool], tuple[IntArray, Matcher]] = {}
        self._sig_counters: dict[int, list[tuple[IntArray, bool]]] = {}
        self.sig_namespace: list[str] = []
        self.sig_labels: list[dict[str, str]] = []
        self._masks: dict[Hashable, BoolArray] = {}
        # Distinct terms of bound pods -> node -> how many pods there carry the term.
        self.terms: dict[TermKey, dict[int, int]] = {}
        # Bumped whenever a distinct term appears in or leaves `terms` (not when only its counts change).
        self.terms_version = 0
        # Per signature: the terms of bound pods that match a pod of that signature, at a terms_version.
        self._matching: dict[int, tuple[int, tuple[tuple[TermKey, dict[int, int]], ...]]] = {}
        # The host ports bound pods take, per node (NodePorts): node -> (host IP, protocol, port) -> pods.
        self.ports: dict[int, Counter[HostPort]] = {}

    def __len__(self) -> int:
        return len(self._slot)

    def _signature(self, pod: Pod) -> int:
        last = self._last
        if last is not None and last[0] is pod and last[1] is pod.labels and last[2] == pod.namespace:
            return last[3]  # the same pod again (its cycle, then its bind)
        sig = self._signature_of(pod)
        self._last = (pod, pod.labels, pod.namespace, sig)
        return sig

    def _signature_of(self, pod: Pod) -> int:
        key = (pod.namespace, frozenset(pod.labels.items()))
        sig = self._sig_ids.get(key)
        if sig is None:
            sig = self._sig_ids[key] = len(self.sig_namespace)
            self.sig_namespace.append(pod.namespace)
            self.sig_labels.append(dict(pod.labels))
        return sig

    def _grow(self) -> None:
        size = 2 * self._node.shape[0]
        self._node = np.resize(self._node, size)
        self._sig = np.resize(self._sig, size)
        self._alive = np.concatenate([self._alive, np.zeros(size - self._alive.shape[0], dtype=bool)])
        self._terminating = np.resize(self._terminating, size)

    def add(self, pod: Pod, node: int) -> None:
        if self._free:
            slot = self._free.pop()
        else:
            if self._top == self._node.shape[0]:
                self._grow()
            slot = self._top
            self._top += 1
        self._slot[pod.key] = slot
        self._node[slot] = node
        self._sig[slot] = self._signature(pod)
        self._alive[slot] = True
        self._terminating[slot] = False
        if self._counters:
            self._count(int(self._sig[slot]), node, 1, terminating=False)
        for term in _pod_terms(pod):
            per_node = self.terms.get(term)
            if per_node is None:
                per_node = self.terms[term] = {}
                self.terms_version += 1
            per_node[node] = per_node.get(node, 0) + 1
        if pod.host_ports:
            self.ports.setdefault(node, Counter()).update(pod.host_ports)

    def remove(self, pod: Pod, node: int) -> None:
        slot = self._slot.pop(pod.key)
        self._alive[slot] = False
        self._free.append(slot)
        if self._counters:
            self._count(int(self._sig[slot]), node, -1, terminating=bool(self._terminating[slot]))
        for term in _pod_terms(pod):
            per_node = self.terms[term]
            left = per_node[node] - 1
            if left:
                per_node[node] = left
            else:
                del per_node[node]
                if not per_node:
                    del self.terms[term]
                    self.terms_version += 1
        if pod.host_ports:
            used = self.ports[node]
            used.subtract(pod.host_ports)
            for port in set(pod.host_ports):
                if used[port] <= 0:
                    del used[port]
            if not used:
                del self.ports[node]

    def terms_matching(self, pod: Pod) -> tuple[tuple[TermKey, dict[int, int]], ...]:
        """The terms of bound pods that match `pod` (by its namespace and labels), each with its pods per node
        (the live counts, which stay up to date as pods come and go)."""
        sig = self._signature(pod)
        known = self._matching.get(sig)
        if known is not None and known[0] == self.terms_version:
            return known[1]
        namespace, labels = pod.namespace, pod.labels
        found = tuple((key, per_node) for key, per_node in self.terms.items() if key[2].matches(namespace, labels))
        if len(self._matching) >= _MAX_MATCHERS:
            self._matching.clear()
        self._matching[sig] = (self.terms_version, found)
        return found

    def set_terminating(self, key: str) -> None:
        slot = self._slot.get(key)
        if slot is not None:
            if self._counters and not self._terminating[slot]:
                # Counters that leave terminating pods out stop counting it.
                node = int(self._node[slot])
                for counts, skip_terminating in self._counters_of(int(self._sig[slot])):
                    if node >= counts.shape[0]:
                        self._counters.clear()
                        self._sig_counters.clear()
                        break
                    if skip_terminating:
                        counts[node] -= 1
            self._terminating[slot] = True

    def _counters_of(self, sig: int) -> list[tuple[IntArray, bool]]:
        known = self._sig_counters.get(sig)
        if known is None:
            known = self._sig_counters[sig] = [
                (counts, skip) for (key, skip), (counts, matches) in self._counters.items()
                if self.signature_mask(key, matches)[sig]]
        return known

    def _count(self, sig: int, node: int, change: int, *, terminating: bool) -> None:
        """Add `change` to the counters a pod of signature `sig` on `node` counts in (a terminating one only in
        those that count terminating pods)."""
        for counts, skip_terminating in self._counters_of(sig):
            if node >= counts.shape[0]:  # a node added since: start the counters afresh when next asked
                self._counters.clear()
                self._sig_counters.clear()
                return
            if not (terminating and skip_terminating):
                counts[node] += change

    def signature_mask(self, key: Hashable, matches: Matcher) -> BoolArray:
        """Which signatures `matches` (namespace, labels) accepts; remembered under `key`, which must name
        the test (a selector and its namespaces), and extended as new signatures appear."""
        known = self._masks.get(key)
        total = len(self.sig_namespace)
        if known is not None and known.shape[0] == total:
            return known
        done = 0 if known is None else known.shape[0]
        extra = np.fromiter((matches(self.sig_namespace[s], self.sig_labels[s]) for s in range(done, total)),
                            dtype=bool, count=total - done)
        mask = extra if known is None else np.concatenate([known, extra])
        if known is None and len(self._masks) >= _MAX_MATCHERS:
            self._masks.clear()
        self._masks[key] = mask
        return mask

    def counts(self, key: Hashable, matches: Matcher, nodes: int, *, skip_terminating: bool = False) -> IntArray:
        """How many bound pods on each of `nodes` nodes `matches` accepts (terminating ones left out when
        `skip_terminating`)."""
        known = self._counters.get((key, skip_terminating))
        if known is not None and known[0].shape[0] == nodes:
            return known[0].copy()
        mask = self.signature_mask(key, matches)
        top = self._top
        chosen = self._alive[:top] & mask[self._sig[:top]]
        if skip_terminating:
            chosen &= ~self._terminating[:top]
        counts: IntArray = np.bincount(self._node[:top][chosen], minlength=nodes)
        if counts.shape[0] == nodes:
            if len(self._counters) >= _MAX_MATCHERS:
                self._counters.clear()
            # Signatures not seen yet are matched against the selector when they first appear (signature_mask
            # extends the mask); a new counter changes what every signature counts in.
            self._counters[(key, skip_terminating)] = (counts.copy(), matches)
            self._sig_counters.clear()
        return counts
