"""The workload controllers the simulator runs, in the order it builds them and tells them of pod events
(a controller that needs another, as the Deployment controller needs the ReplicaSet controller, comes after
it). A new controller is its module and one line here (and its kind's line in phalanx/api/kinds.py). Read
it as `registry.CONTROLLERS` when the controllers are built, so that a test may add one."""

from __future__ import annotations

from phalanx.controllers.cronjob import CronJobController
from phalanx.controllers.daemonset import DaemonSetController
from phalanx.controllers.deployment import DeploymentController
from phalanx.controllers.jobset import JobSetController
from phalanx.controllers.kubeflow import TrainingJobController
from phalanx.controllers.lws import LeaderWorkerSetController
from phalanx.controllers.protocol import Controller
from phalanx.controllers.replicaset import ReplicaSetController
from phalanx.controllers.statefulset import StatefulSetController

CONTROLLERS: tuple[type[Controller], ...] = (
    ReplicaSetController,
    DeploymentController,
    StatefulSetController,
    DaemonSetController,
    CronJobController,
    JobSetController,
    LeaderWorkerSetController,
    TrainingJobController,
)
