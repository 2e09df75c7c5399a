"""`metadata.generateName`, as every Kueue sample uses it: the object is named as the API server names it (the
prefix cut to 58 characters, then five of utilrand's characters), the same names on every load of the same
files; a prefix the API server rejects is an error naming the file, the object and the field."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from phalanx import InputError, load_paths
from phalanx.api.names import MAX_GENERATED_BASE, generated_name

UPSTREAM = Path(__file__).resolve().parents[1] / "upstream"
SUFFIX = "[bcdfghjklmnpqrstvwxz2456789]{5}"


def test_kueue_sample_job_unchanged_gets_a_generated_name() -> None:
    sample = str(UPSTREAM / "kueue" / "sample-job.yaml")
    first, again = load_paths([sample]), load_paths([sample])
    [job] = first.jobs
    assert re.fullmatch(f"sample-job-{SUFFIX}", job.name)
    assert job.namespace == "default"
    assert [j.name for j in again.jobs] == [job.name]


def _job(prefix: str) -> str:
    return (f"apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: {prefix}\nspec:\n  template:\n"
            "    spec:\n      restartPolicy: Never\n      containers: [{name: c, image: i}]\n")


def test_two_objects_with_one_prefix_get_two_names(tmp_path: Path) -> None:
    path = tmp_path / "jobs.yaml"
    path.write_text(_job("batch-") + "---\n" + _job("batch-"))
    names = [job.name for job in load_paths([str(path)]).jobs]
    assert len(set(names)) == 2 and all(re.fullmatch(f"batch-{SUFFIX}", n) for n in names)


def test_a_name_wins_over_generate_name(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(_job("batch-").replace("metadata:\n", "metadata:\n  name: fixed\n"))
    assert [job.name for job in load_paths([str(path)]).jobs] == ["fixed"]


def test_a_long_prefix_is_cut_to_58_characters() -> None:
    name = generated_name("p" * 80, "key")
    assert len(name) == MAX_GENERATED_BASE + 5 == 63
    assert name.startswith("p" * 58)


@pytest.mark.parametrize(("prefix", "detail"), [
    ("Batch-", "a lowercase RFC 1123 subdomain"),
    ("'-batch-'", "a lowercase RFC 1123 subdomain"),
    ("''", "is required"),
    ("[1]", "must be a string"),
])
def test_a_prefix_the_api_server_rejects(tmp_path: Path, prefix: str, detail: str) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(_job(prefix))
    with pytest.raises(InputError) as caught:
        load_paths([str(path)])
    assert caught.value.file == str(path)
    assert caught.value.field == "metadata.generateName"
    assert detail in caught.value.detail
    if "subdomain" in detail:
        assert f"Invalid value: \"{prefix.strip(chr(39))}\"" in caught.value.detail
