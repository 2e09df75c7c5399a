"""A cycle that failed with an error (kube-scheduler's handleSchedulingFailure and
handlePodGroupFailureBeforeScheduling): its entry alone fails, its books are put back, its pods and PodGroups
are told why, and the error is logged once."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import assert_never

from phalanx.api.objects import Pod, PodGroup
from phalanx.scheduler.decisions import (
    Bind,
    Decision,
    DeviceTaintEviction,
    Evict,
    GroupCondition,
    Nominate,
    Preemption,
    Unschedulable,
)
from phalanx.scheduler.entries import COMPOSITE, GROUP, POD
from phalanx.scheduler.framework import PluginError
from phalanx.scheduler.handle import Handle

LOG = logging.getLogger(__name__)
MAX_ERROR_MESSAGE = 1024


def error_message(exc: Exception) -> str:
    """What a failed cycle's pods are told: a plugin's error as it words it, anything else by its type."""
    text = str(exc) if isinstance(exc, PluginError) else f"{type(exc).__name__}: {exc}"
    return text if len(text) <= MAX_ERROR_MESSAGE else text[:MAX_ERROR_MESSAGE - 1] + "…"


class CycleErrors:
    def __init__(self, scheduler: Handle) -> None:
        self.s = scheduler

    def failed(self, entry: str, exc: Exception, mark: int, now: float) -> None:
        """kube-scheduler's handling of a cycle that ends in an error (a plugin's Error status, or here any
        exception): what the cycle changed is undone (its trials already were, as they ended; the bindings it
        decided are taken back here), its pods get PodScheduled=False with reason SchedulerError and its
        PodGroups PodGroupInitiallyScheduled=False/SchedulerError, and the entry retries after the error
        backoff, which no event cuts short (`SchedulingQueue.errored`: asleep while nothing changes, as the same
        books fail the same way). The error is logged once per entry and message."""
        message = error_message(exc)
        self.log_error(entry, message, exc)
        pods, groups = self._entry_objects(entry)
        undone = self._undo_bindings(pods, mark)
        own = {pod.key for pod in pods} | {GROUP + group.key for group in groups}
        self.s.out[mark:] = [d for d in self.s.out[mark:] if not self._superseded(d, undone, own)]
        pending = [pod for pod in pods if pod.key not in self.s.cluster.bound]
        for pod in pending:
            self.s.messages[pod.key] = message
            self.s.out.append(Unschedulable(pod, message, "SchedulerError"))
        for group in groups:
            self.s.messages[GROUP + group.key] = message
            self.s.condition(group, False, "SchedulerError", message)
        if pending:
            self.s.queue.errored(entry, self.s.priority_of(pending[0]), min(p.arrival for p in pending), now,
                                 size=len(pending))
        else:
            self.s.queue.done(entry)

    def log_error(self, entry: str, message: str, exc: Exception) -> None:
        """Log an entry's error once (again only when it changes)."""
        if self.s.errors.get(entry) == message:
            return
        self.s.errors[entry] = message
        if isinstance(exc, PluginError):  # what the input asks for cannot be done: its message says why
            LOG.warning("scheduling %s failed: %s", entry, message)
        else:  # a fault of the engine's own: the traceback is what fixing it needs
            LOG.error("scheduling %s failed: %s", entry, message, exc_info=exc)

    def _entry_objects(self, entry: str) -> tuple[list[Pod], list[PodGroup]]:
        """The pods a queue entry schedules (pending or bound), and its PodGroups (a tree's leaves)."""
        if entry.startswith(GROUP):
            group = self.s.groups.get(entry[len(GROUP):])
            keys = sorted(self.s.members.get(entry[len(GROUP):], ()))
            return [self.s.pods[k] for k in keys if k in self.s.pods], [group] if group is not None else []
        if entry.startswith(COMPOSITE):
            leaves = self.s.trees.leaves(entry[len(COMPOSITE):])
            if leaves is None:
                return [], []
            keys = sorted(k for leaf in leaves for k in self.s.members.get(leaf.key, ()))
            return [self.s.pods[k] for k in keys if k in self.s.pods], leaves
        pod = self.s.pods.get(entry[len(POD):])
        return [pod] if pod is not None else [], []

    def _undo_bindings(self, pods: Sequence[Pod], mark: int) -> set[str]:
        """Take back the bindings of the entry's pods that its failed cycle decided (a Bind since `mark`) or
        had only half made (on a node in the books, not yet running): they wait for the retry."""
        decided = {d.pod.key for d in self.s.out[mark:] if isinstance(d, Bind)}
        undone: set[str] = set()
        for pod in pods:
            key = pod.key
            if key in decided or (key in self.s.cluster.bound and key not in self.s.running.node_of):
                self.s.assumed.pop(key, None)
                if key in self.s.running.node_of:
                    self.s.running.remove(key)
                if key in self.s.cluster.bound:
                    self.s.cycle.unreserve(key, pod)
                undone.add(key)
        return undone

    def _superseded(self, decision: Decision, undone: set[str], own: set[str]) -> bool:
        """A decision of the failed cycle that its error replaces: the bindings taken back, the outcomes of the
        entry's own pods and PodGroups (`own`: pod keys, GROUP + PodGroup keys; a condition True is forgotten
        with them). Evictions and nominations stay: they were carried out in the books already, and the
        victims go either way."""
        match decision:
            case Bind():
                return decision.pod.key in undone
            case Unschedulable():
                return decision.pod.key in own
            case GroupCondition():
                if GROUP + decision.group.key not in own:
                    return False
                if decision.status:
                    self.s.initially_scheduled.discard(decision.group.key)
                return True
            case Evict() | Nominate() | Preemption() | DeviceTaintEviction():
                return False
            case _:
                assert_never(decision)
