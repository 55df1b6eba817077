"""Python call overhead of pageframe's page allocator: ns per alloc+free
pair from Python (one page per call, and bulk arrays), beside the Rust
path's own figure (the `bulk` experiment's order-0 one-at-a-time row, same
machine, same build). Run with a release build installed:
``python python/benches/overhead.py``."""

import time

import pageframe

PAIRS = 200_000
BULK = 512
ROUNDS = 400


def best_of(runs, body):
    return min(body() for _ in range(runs))


def single():
    machine = pageframe.Machine(mem="1G", nodes=1, cpus=1)
    alloc, free = machine.alloc, machine.free
    start = time.perf_counter_ns()
    for _ in range(PAIRS):
        free(alloc())
    return (time.perf_counter_ns() - start) / PAIRS


def bulk():
    machine = pageframe.Machine(mem="1G", nodes=1, cpus=1)
    start = time.perf_counter_ns()
    for _ in range(ROUNDS):
        machine.free_bulk(machine.alloc_bulk(BULK))
    return (time.perf_counter_ns() - start) / (ROUNDS * BULK)


def rust_path():
    rows = pageframe.run("bulk", params={"peers": False})
    row = rows[
        (rows["allocator"] == "pageframe")
        & (rows["variant"] == "default")
        & (rows["order"] == 0)
        & (rows["batch"] == 0)
    ].iloc[0]
    return row["ns_per_page"]


if __name__ == "__main__":
    per_pair = best_of(5, single)
    per_page = best_of(5, bulk)
    rust = rust_path()
    print(f"Rust path (bulk experiment, order 0, one at a time): {rust:.1f} ns per alloc+free pair")
    print(f"Python, one page per call: {per_pair:.1f} ns per pair -> overhead {per_pair - rust:.1f} ns")
    print(f"Python, alloc_bulk/free_bulk of {BULK}: {per_page:.1f} ns per page")
