# %% [markdown]
# # pageframe from Python
#
# A notebook-style tour (cells marked `# %%`: open in Jupyter with jupytext,
# or VS Code; or run it whole: `python examples/python_tour.py`).
# Needs `pip install ./python matplotlib`.

# %%
import pageframe

machine = pageframe.Machine(mem="4G", nodes=2, cpus=4)
print(machine.text("buddyinfo"))

# %% [markdown]
# Allocate a bulk array of order-0 pages on node 1 and a few order-3 blocks,
# and look at the free lists as a DataFrame.

# %%
pages = machine.alloc_bulk(5000, node=1)
blocks = [machine.alloc(order=3, node=0) for _ in range(100)]
buddy = machine.buddyinfo()
print(buddy.pivot_table(index=["node", "zone"], columns="order", values="free"))
print("free pages:", machine.vmstat()["nr_free_pages"])

# %%
machine.free_bulk(pages)
for pfn in blocks:
    machine.free(pfn, order=3)
machine.check_invariants()

# %% [markdown]
# Errors carry the Linux errno.

# %%
import errno

try:
    machine.free(blocks[0], order=3)
except pageframe.PageframeError as err:
    assert err.errno == errno.EINVAL
    print("refused:", err.strerror)

# %% [markdown]
# Run an experiment: its rows are a DataFrame, the same rows as
# `pageframe run numa-balancing --seed 1 --format json`.

# %%
params = {"duration_s": 10, "eater_exit_s": 4}
rows = pageframe.run("numa-balancing", seed=1, params=params, progress=True)
results = rows[rows.get("series").isna()] if "series" in rows else rows
print(results.dropna(axis=1, how="all"))

# %% [markdown]
# A small sweep over seeds and the access pattern, on local threads (pass
# `ray=True` after `ray.init()` to run it on a cluster).

# %%
import pathlib
import tempfile

from pageframe.sweep import run_sweep

spec = pathlib.Path(tempfile.mkdtemp()) / "sweep.toml"
spec.write_text(
    'experiment = "numa-balancing"\nseeds = 3\n[params]\n'
    'duration_s = 10\neater_exit_s = 4\npattern = ["uniform", "zipf"]\n'
)
table = run_sweep(spec, out=str(spec.parent / "results"))
print(table.attrs["page"])
summary = table.groupby(["pattern", "policy"])["improvement"].agg(["mean", "min", "max"])
print(summary)

# %%
try:
    import matplotlib.pyplot as plt

    summary["mean"].unstack("policy").plot.bar(title="improvement by pattern (mean of 3 seeds)")
    plt.tight_layout()
    plt.savefig(spec.parent / "improvement.png")
    print("plot:", spec.parent / "improvement.png")
except ImportError:
    print("(pip install matplotlib for the plot)")
