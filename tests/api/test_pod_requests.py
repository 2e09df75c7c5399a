"""A pod's requests as kube-scheduler counts them (resourcehelper.PodRequests)."""

from tests.builders import MakePod

GI = 2**30
MI = 2**20


def test_containers_are_summed() -> None:
    pod = MakePod().req(cpu="500m", memory="1Gi").req(cpu="1.5", memory="512Mi").obj()
    assert pod.requests == {"cpu": 2000, "memory": GI + 512 * MI}


def test_init_containers_count_by_their_largest_step() -> None:
    # Regular init containers run one at a time before the app: the pod needs max(sum(app), max(init)).
    pod = (MakePod().req(cpu="1", memory="1Gi")
           .init_container({"cpu": "3", "memory": "256Mi"})
           .init_container({"cpu": "2", "memory": "2Gi"}).obj())
    assert pod.requests == {"cpu": 3000, "memory": 2 * GI}


def test_init_containers_below_the_app_do_not_count() -> None:
    pod = MakePod().req(cpu="4").init_container({"cpu": "1"}).obj()
    assert pod.requests == {"cpu": 4000}


def test_sidecars_accumulate_and_run_beside_the_app() -> None:
    # KEP-753: a restartPolicy: Always init container keeps running, so it adds to the app's requests
    # and to every init step after it.
    pod = (MakePod().req(cpu="1")
           .init_container({"cpu": "500m"}, sidecar=True)
           .init_container({"cpu": "3"})              # step: 3 + 0.5 (sidecar so far) = 3.5
           .init_container({"cpu": "200m"}, sidecar=True).obj())
    # app + sidecars = 1 + 0.5 + 0.2 = 1.7; largest init step = 3.5
    assert pod.requests == {"cpu": 3500}


def test_sidecars_dominate_when_init_steps_are_small() -> None:
    pod = (MakePod().req(cpu="2", memory="1Gi")
           .init_container({"cpu": "1", "memory": "1Gi"}, sidecar=True)
           .init_container({"cpu": "100m", "memory": "64Mi"}).obj())
    assert pod.requests == {"cpu": 3000, "memory": 2 * GI}


def test_init_step_before_a_sidecar_does_not_include_it() -> None:
    # The first init container runs before the sidecar starts: its step is 3, not 3 + 1.
    pod = (MakePod().req(cpu="1")
           .init_container({"cpu": "3"})
           .init_container({"cpu": "1"}, sidecar=True).obj())
    assert pod.requests == {"cpu": 3000}


def test_overhead_is_added() -> None:
    pod = MakePod().req(cpu="1", memory="1Gi").overhead(cpu="250m", memory="120Mi").obj()
    assert pod.requests == {"cpu": 1250, "memory": GI + 120 * MI}


def test_overhead_is_added_after_the_init_maximum() -> None:
    pod = MakePod().req(cpu="1").init_container({"cpu": "2"}).overhead(cpu="100m").obj()
    assert pod.requests == {"cpu": 2100}


def test_limits_default_missing_requests() -> None:
    # The API server defaults a request to its limit when only the limit is set.
    pod = MakePod().container(limits={"cpu": "2", "memory": "4Gi"}).obj()
    assert pod.requests == {"cpu": 2000, "memory": 4 * GI}


def test_an_explicit_request_wins_over_the_limit() -> None:
    pod = MakePod().container(requests={"cpu": "500m"}, limits={"cpu": "2", "memory": "1Gi"}).obj()
    assert pod.requests == {"cpu": 500, "memory": GI}


def test_init_container_limits_default_requests_too() -> None:
    pod = MakePod().req(cpu="1").init_container(limits={"cpu": "3"}).obj()
    assert pod.requests == {"cpu": 3000}


def test_extended_resources_and_hugepages_count_like_cpu() -> None:
    pod = MakePod().req({"nvidia.com/gpu": 2, "hugepages-2Mi": "1Gi"}, cpu="4").req({"nvidia.com/gpu": "1"}).obj()
    assert pod.requests == {"cpu": 4000, "nvidia.com/gpu": 3, "hugepages-2Mi": GI}


def test_a_pod_without_requests_requests_nothing_but_scores_with_defaults() -> None:
    pod = MakePod().container().obj()
    assert pod.requests == {}
    # kube-scheduler's non-zero defaults for scoring: 100m cpu and 200Mi memory.
    assert pod.nonzero("cpu") == 100
    assert pod.nonzero("memory") == 200 * MI
    assert pod.nonzero("nvidia.com/gpu") == 0


def test_non_zero_defaults_apply_per_resource() -> None:
    pod = MakePod().req(memory="1Gi").obj()
    assert pod.nonzero("cpu") == 100
    assert pod.nonzero("memory") == GI


def test_zero_requests_are_dropped() -> None:
    pod = MakePod().req(cpu="0", memory="1Gi").obj()
    assert pod.requests == {"memory": GI}


def test_pod_level_requests_win_over_the_containers_for_cpu_memory_and_hugepages() -> None:
    """PodLevelResources (beta, on in v1.37): PodRequests replaces the containers' sum with spec.resources for the
    supported resources; other resources (a GPU) stay the containers'; overhead is added on top. Scoring fills
    100m/200Mi only where neither level asks (getNonMissingContainerRequests)."""
    pod = MakePod().req(cpu="250m", memory="64Mi", **{"nvidia.com/gpu": "1"})
    pod.spec["resources"] = {"requests": {"cpu": "2", "hugepages-2Mi": "4Mi"}}
    pod.spec["overhead"] = {"cpu": "100m"}
    made = pod.obj()
    assert made.requests == {"cpu": 2100, "memory": 64 * MI, "hugepages-2Mi": 4 * MI, "nvidia.com/gpu": 1}
    assert made.scoring_requests == (2100, 64 * MI)
    bare = MakePod().req()
    bare.spec["resources"] = {"requests": {"cpu": "1"}}
    assert bare.obj().requests == {"cpu": 1000}
    assert bare.obj().scoring_requests == (1000, 200 * MI)  # memory asked nowhere: the default
