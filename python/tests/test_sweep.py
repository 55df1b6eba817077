"""Sweeps: local threads and a local Ray instance started here give the
same table; a re-run skips the points done; a bad spec is one line."""

import os
import subprocess
import sys

import pytest

from pageframe import PageframeError
from pageframe.sweep import run_sweep

SPEC = """
experiment = "numa-balancing"
seeds = [1, 2]
[params]
duration_s = 4
eater_exit_s = 2
map_mib = 8
eater_mib = 16
pattern = ["uniform", "zipf"]
"""


def deterministic(frame):
    """The table without the wall times."""
    return frame.drop(columns=["seconds"]).reset_index(drop=True)


@pytest.fixture()
def spec(tmp_path):
    path = tmp_path / "spec.toml"
    path.write_text(SPEC)
    return path


def test_a_local_sweep_gathers_every_point_and_resumes(spec, tmp_path):
    out = tmp_path / "local"
    frame = run_sweep(spec, out=str(out), jobs=2)
    assert frame.attrs["ok"] == 4 and frame.attrs["failed"] == 0
    assert set(frame["seed"]) == {1, 2}
    assert set(frame["pattern"]) == {"uniform", "zipf"}
    assert (frame["status"] == "ok").all()
    assert os.path.exists(out / "index.html")
    page = (out / "index.html").read_text()
    assert "by pattern" in page and "<svg" in page
    if frame.attrs["parquet"]:
        import pandas

        parquet = pandas.read_parquet(frame.attrs["parquet"])
        assert len(parquet) == len(frame)
    points = sorted(os.listdir(out / "points"))
    stamps = [os.stat(out / "points" / name).st_mtime_ns for name in points]
    again = run_sweep(spec, out=str(out), jobs=2)
    assert [os.stat(out / "points" / name).st_mtime_ns for name in points] == stamps, "done points ran again"
    assert deterministic(again).equals(deterministic(frame))


def test_a_sweep_on_a_local_ray_instance_equals_the_local_one(spec, tmp_path):
    ray = pytest.importorskip("ray")
    local = run_sweep(spec, out=str(tmp_path / "local"), jobs=2)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        on_ray = run_sweep(spec, out=str(tmp_path / "ray"), ray=True)
    finally:
        ray.shutdown()
    assert on_ray.attrs["ok"] == 4
    assert deterministic(on_ray).equals(deterministic(local))


def test_a_bad_spec_is_one_line_and_exit_status_2(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('experiment = "numa-balancing"\n[params]\npattern = ["spiral"]\n')
    with pytest.raises(PageframeError) as err:
        run_sweep(path, out=str(tmp_path / "out"))
    assert "numa-balancing.pattern" in str(err.value)
    shown = subprocess.run(
        [sys.executable, "-m", "pageframe.sweep", str(path), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
    )
    assert shown.returncode == 2
    assert shown.stderr.count("\n") == 1 and shown.stderr.startswith("pageframe: "), shown.stderr
