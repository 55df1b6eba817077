"""The Python API: machines, views, errors, experiments (equal to the CLI's
JSON for the same seed), replays and conformance suites."""

import errno
import json
import subprocess
import threading

import pandas
import pytest

import pageframe
from pageframe import Machine, PageframeError

#: A deterministic experiment that runs in seconds at quick scale, with a
#: parameter to override.
EXPERIMENT = "numa-balancing"
SMALL = {"duration_s": 4, "eater_exit_s": 2, "map_mib": 8, "eater_mib": 16}


def test_a_machine_allocates_and_frees_pages_and_bulk_arrays():
    machine = Machine(mem="256M", nodes=2, cpus=2)
    assert machine.total_bytes == 256 << 20
    assert machine.nr_cpus == 2
    free_at_boot = machine.vmstat()["nr_free_pages"]
    pfn = machine.alloc(order=3, node=1)
    assert pfn % 8 == 0
    assert pfn >= (128 << 20) // 4096, "node 1 holds the upper half"
    pfns = machine.alloc_bulk(100)
    assert len(pfns) == 100 and len(set(pfns)) == 100
    machine.check_invariants()
    machine.free(pfn, order=3)
    machine.free_bulk(pfns)
    machine.check_invariants()
    counters = machine.vmstat()
    assert counters["nr_free_pages"] + counters["nr_free_pcp_pages"] == free_at_boot


def test_errors_are_oserrors_with_the_linux_errno():
    machine = Machine(mem="16M", nodes=1, cpus=1)
    pfn = machine.alloc()
    machine.free(pfn)
    with pytest.raises(PageframeError) as double_free:
        machine.free(pfn)
    assert isinstance(double_free.value, OSError)
    assert double_free.value.errno == errno.EINVAL
    assert "double free" in str(double_free.value)
    with pytest.raises(PageframeError) as too_large:
        machine.alloc(order=40)
    assert too_large.value.errno == errno.EINVAL
    with pytest.raises(PageframeError) as no_node:
        machine.alloc(node=3)
    assert no_node.value.errno == errno.ENODEV
    held = []
    with pytest.raises(PageframeError) as no_memory:
        while True:
            held.append(machine.alloc(order=4))
    assert no_memory.value.errno == errno.ENOMEM
    assert held, "some order-4 blocks fit"
    machine.check_invariants()
    with pytest.raises(PageframeError) as bad_size:
        Machine(mem="lots")
    assert bad_size.value.errno == errno.EINVAL
    assert "--mem" in str(bad_size.value)


def test_a_toml_machine_file_boots_like_the_cli(tmp_path, cli):
    path = tmp_path / "machine.toml"
    path.write_text('[[node]]\nmem = "64M"\ncpus = 1\n[[node]]\nmem = "64M"\ncpus = 1\n')
    machine = Machine.from_toml(path)
    assert machine.nr_cpus == 2
    shown = subprocess.run(
        [cli, "proc", "buddyinfo,zoneinfo", "--config", str(path)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert machine.text("buddyinfo") in shown
    assert machine.text("zoneinfo") in shown


def test_every_view_has_text_and_structured_data():
    machine = Machine(mem="128M", nodes=2, cpus=2)
    machine.alloc_bulk(10, node=1)
    for name in pageframe.VIEWS:
        assert isinstance(machine.text(name), str)
        assert machine.data(name) is not None
    buddy = machine.buddyinfo()
    assert isinstance(buddy, pandas.DataFrame)
    free_pages = int((buddy["free"] * (2 ** buddy["order"])).sum())
    assert free_pages == machine.vmstat()["nr_free_pages"]
    types = machine.pagetypeinfo()
    assert set(types["blocks"]["node"]) == {0, 1}
    assert int((types["free"]["free"] * (2 ** types["free"]["order"])).sum()) == free_pages
    zones = machine.zoneinfo()
    normal = [zone for zone in zones if zone["zone"] == "Normal"]
    assert [zone["node"] for zone in normal] == [0, 1]
    assert sum(zone["free"] for zone in normal) == free_pages
    assert len(normal[0]["pagesets"]) == 2 and "batch" in normal[0]["pagesets"][0]
    assert machine.data("shuffle") is False
    sysctls = machine.data("sysctl")
    assert sysctls["vm.watermark_scale_factor"] == 10
    assert sysctls["vm.lowmem_reserve_ratio"] == [256, 256, 32, 0]


def test_sysctls_are_written_as_the_kernel_takes_them():
    machine = Machine(mem="128M")
    machine.write_sysctl("vm.min_free_kbytes", "0x400\n")
    assert machine.data("sysctl")["vm.min_free_kbytes"] == 1024
    before = machine.text("zoneinfo")
    with pytest.raises(pageframe.PageframeError) as refused:
        machine.write_sysctl("vm.watermark_scale_factor", "0")
    assert refused.value.errno == errno.EINVAL
    assert machine.text("zoneinfo") == before
    with pytest.raises(pageframe.PageframeError) as unknown:
        machine.write_sysctl("vm.swappiness", "60")
    assert unknown.value.errno == errno.ENOENT
    assert pageframe.views.parse("vmstat", machine.text("vmstat")) == machine.vmstat()
    with pytest.raises(PageframeError):
        machine.text("meminfo-of-mars")


def test_run_equals_the_cli_json_for_the_same_seed(tmp_path, cli):
    config = tmp_path / "params.toml"
    config.write_text(f"[{EXPERIMENT}]\n" + "".join(f"{k} = {v}\n" for k, v in SMALL.items()))
    shown = subprocess.run(
        [cli, "run", EXPERIMENT, "--seed", "3", "--format", "json", "--config", str(config)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    expected = json.loads(shown)
    ours = pageframe.run(EXPERIMENT, seed=3, params=SMALL, as_json=True)
    assert ours == expected
    frame = pageframe.run(EXPERIMENT, seed=3, params=SMALL)
    assert frame.attrs["experiment"] == EXPERIMENT and frame.attrs["seed"] == 3
    assert frame.equals(pandas.DataFrame(expected["rows"]))
    other_seed = pageframe.run(EXPERIMENT, seed=4, params=SMALL, as_json=True)
    assert other_seed != expected


def test_run_checks_parameters_and_names():
    with pytest.raises(PageframeError) as unknown:
        pageframe.run("no-such-experiment")
    assert unknown.value.errno == errno.EINVAL
    with pytest.raises(PageframeError) as bad:
        pageframe.run(EXPERIMENT, params={"duration_s": -1})
    assert "numa-balancing.duration_s" in str(bad.value)
    with pytest.raises(TypeError):
        pageframe.run(EXPERIMENT, params={"duration_s": [1]})
    keys = [param["key"] for param in pageframe.params(EXPERIMENT)]
    assert set(SMALL) <= set(keys)
    assert EXPERIMENT in pageframe.experiments()


def test_long_calls_release_the_gil_and_report_progress():
    seen = []
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)
            stop.wait(0.001)

    thread = threading.Thread(target=ticker)
    thread.start()
    try:
        pageframe.run(EXPERIMENT, seed=1, params=SMALL, progress=lambda done, total: seen.append((done, total)))
    finally:
        stop.set()
        thread.join()
    assert seen, "no progress reported"
    assert all(0 <= done <= total for done, total in seen)
    assert len(ticks) > 10, "the other thread did not run while the experiment did"


def test_replay_returns_the_cli_rows(cli):
    shown = subprocess.run(
        [cli, "trace", "replay", pageframe._native.shipped_trace(), "--format", "json", "--seed", "5"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    expected = json.loads(shown)
    ours = pageframe.replay(seed=5, as_json=True)
    notes = ours.pop("notes")
    assert ours == expected
    assert any("replayed on" in note for note in notes)
    with pytest.raises(PageframeError):
        pageframe.replay("/nonexistent.pftrace")


def test_conform_runs_or_says_why_not():
    result = pageframe.conform(["mempolicy"])
    assert isinstance(result, dict) and result
    with pytest.raises(PageframeError) as unknown:
        pageframe.conform(["no-such-suite"])
    assert unknown.value.errno == errno.EINVAL
