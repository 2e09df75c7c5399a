"""The orders of events that a real cluster leaves to timing, as the simulator can replay them.

On a real cluster the API server, the controllers and kube-scheduler run concurrently. What the simulator does
at one instant in one order, a real cluster may do in another, and the outcome can change with it:

- **as listed**: the simulator's own order. Every object of an instant is in before the scheduler's round,
  in the order the inputs list them (a Job's pods by index).
- **cycle between creations**: kube-scheduler runs a cycle as soon as a pod is in its queue, so it may cycle
  between two creations of one instant. GangScheduling's PreEnqueue releases a PodGroup once `minCount` members
  exist, and the group's cycle places only those; a later member is placed alone (pinned by TAS to the domain
  the first cycle chose). A CompositePodGroup root may likewise cycle with only some leaves' pods in.
- **creations reversed**: controllers create concurrently (the Job controller makes a Job's pods in parallel),
  so which of an instant's creations reaches the queue first is arbitrary: queue entries of one timestamp and
  priority come out in the reverse order.
- **both**: the scheduler cycling between creations that arrive in the reverse order (an instant's events last
  first, and the pods of one event reversed in the queue).
- **ends one at a time**: a kubelet's pods end as separate deletions, and kube-scheduler retries waiting pods
  after each; the simulator frees an instant's ending pods together before any is tried.
- **shuffled**: four orders drawn at random (seeded, so a run repeats), two with rounds between creations and
  between ends, for the orders that are neither first to last nor last to first.

phalanx/sim/timing.py runs a simulation under each and says which workloads end differently.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Interleaving:
    name: str
    how: str  # how the outcome arises, in a sentence
    reverse_queue: bool = False  # queue entries of one timestamp and priority in the reverse order
    reverse_events: bool = False  # an instant's events (objects created, pods ending) in the reverse order
    between_creations: bool = False  # a scheduling round after each creation of an instant, not after them all
    between_ends: bool = False  # a scheduling round after each pod that ends (or is deleted) at an instant
    shuffle: int = 0  # a seed: an instant's events, and queue entries of one timestamp and priority, in an order
    # drawn from it (0: none)


AS_LISTED = Interleaving("as-listed", "every object of an instant is in before the scheduler's cycle, in the "
                         "order the inputs list them")
BETWEEN = Interleaving("cycle-between-creations", "the scheduler cycles between an instant's creations: a "
                       "PodGroup is released once minCount members exist and later members are placed alone",
                       between_creations=True)
REVERSED = Interleaving("creations-reversed", "an instant's concurrent creations reach the queue in the reverse "
                        "order (a Job controller's pods, pods created together)", reverse_queue=True)
ENDS = Interleaving("ends-one-at-a-time", "pods that end at one instant go one at a time, the scheduler retrying "
                     "waiting pods after each (a kubelet's deletions are separate events)", between_ends=True)
BOTH = Interleaving("reversed-between-creations", "an instant's creations in the reverse order, the scheduler "
                    "cycling between them", reverse_queue=True, reverse_events=True,
                    between_creations=True)

# Orders drawn at random stand for the rest of the arbitrary orders concurrent creations can take (a Job's pods
# reaching the queue neither first to last nor last to first); every other one with cycles between creations.
SHUFFLED = tuple(Interleaving(f"shuffled-{k}", "an instant's creations in an arbitrary order (drawn with seed "
                              f"{k})" + (", the scheduler cycling between them and between pods that end" if k % 2 == 0
                                         else ""),
                              shuffle=k, between_creations=k % 2 == 0, between_ends=k % 2 == 0)
                 for k in range(1, 5))

INTERLEAVINGS = (AS_LISTED, BETWEEN, REVERSED, BOTH, ENDS, *SHUFFLED)
