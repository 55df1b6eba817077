"""The pageframe laboratory from Python.

Machines booted from the same descriptions as the ``pageframe`` command,
pages and bulk arrays allocated and freed by PFN, every kernel-format view
as text or as dicts/DataFrames, experiments run with their rows as a pandas
DataFrame, trace replays, conformance suites, and parameter sweeps locally
or on a Ray cluster (:mod:`pageframe.sweep`).

Errors are :class:`PageframeError`, a subclass of :class:`OSError` whose
``errno`` is the Linux error number where there is one (``ENOMEM`` for an
allocation that found no memory, ``EINVAL`` for a bad argument).

Long calls (``run``, ``replay``, ``conform``, sweeps) release the GIL;
``progress=True`` shows a bar (tqdm if installed, else a line on stderr),
or pass a callable taking ``(done, total)``.
"""

import json
import sys

from . import _native, views as _views
from ._native import PageframeError

__all__ = [
    "VIEWS",
    "Machine",
    "PageframeError",
    "conform",
    "experiments",
    "params",
    "replay",
    "run",
]

#: The names of the kernel-format views (parsers: :mod:`pageframe.views`).
VIEWS = _native.views()


class Machine(_native.Machine):
    """A booted machine.

    ``Machine(mem="64G", nodes=4, cpus=8, cmdline="numa=fake=4U")`` takes
    what ``pageframe proc``/``info`` take (``config`` is a TOML machine file:
    file < arguments < cmdline). ``alloc``/``free`` take one block by PFN;
    ``alloc_bulk``/``free_bulk`` take lists of order-0 PFNs in one call.
    """

    @classmethod
    def from_toml(cls, path, **overrides):
        """Boots the machine described by a TOML machine file."""
        return cls(config=str(path), **overrides)

    def text(self, name):
        """A view as the kernel prints it (``/proc/<name>``)."""
        return self.view(name)

    def data(self, name):
        """A view as structured data (see :mod:`pageframe.views`)."""
        return _views.parse(name, self.view(name))

    def buddyinfo(self):
        """``/proc/buddyinfo`` as a DataFrame: node, zone, order, free blocks."""
        return self.data("buddyinfo")

    def pagetypeinfo(self):
        """``/proc/pagetypeinfo``: free blocks per order and type, and
        pageblocks per type, as two DataFrames in a dict."""
        return self.data("pagetypeinfo")

    def zoneinfo(self):
        """``/proc/zoneinfo``: one dict of counters per (node, zone)."""
        return self.data("zoneinfo")

    def vmstat(self):
        """``/proc/vmstat`` as a dict of counters."""
        return self.data("vmstat")


def _progress(progress, label):
    """A (done, total) callback for ``progress`` (None, True or a callable)."""
    if progress is None or progress is False:
        return None
    if callable(progress):
        return progress
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    if tqdm is not None:
        bar = tqdm(total=1000, desc=label, leave=False)

        def update(done, total):
            position = done * 1000 // total if total else 0
            bar.update(position - bar.n)
            if position >= 1000:
                bar.close()

        return update

    def line(done, total):
        percent = done * 100 // total if total else 0
        sys.stderr.write(f"\r{label}: {percent:3d}%")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()

    return line


def _frame(report):
    """A report's JSON object as a DataFrame with its metadata in ``attrs``."""
    import pandas

    frame = pandas.DataFrame(report["rows"])
    frame.attrs.update(
        {key: report[key] for key in ("experiment", "seed", "scale") if key in report}
    )
    return frame


def experiments():
    """The experiments' names, in ``run all`` order."""
    return _native.experiment_names()


def params(name, scale="quick"):
    """An experiment's parameters: a list of dicts (key, doc, default)."""
    return json.loads(_native.experiment_params(name, scale))


def run(name, scale="quick", seed=42, params=None, progress=None, corpus=None, as_json=False):
    """Runs an experiment; returns its rows as a DataFrame.

    ``params`` overrides the scale's defaults (``pageframe config NAME``
    lists them); values are checked as a config file's. With
    ``as_json=True`` the report's JSON object (the CLI's ``--format json``)
    is returned instead.
    """
    text = _native.run(
        name,
        scale=scale,
        seed=seed,
        params=params,
        progress=_progress(progress, name),
        corpus=None if corpus is None else str(corpus),
    )
    report = json.loads(text)
    return report if as_json else _frame(report)


def replay(path=None, seed=42, cmdline="", fit=False, as_json=False, **machine):
    """Replays a trace (.pftrace or text; default: the repository's) and
    returns pageframe's figures beside the kernel's as a DataFrame.

    ``machine`` may give ``mem``, ``nodes``, ``cpus`` or ``config``; by
    default the machine is shaped like the traced host.
    """
    path = _native.shipped_trace() if path is None else path
    text, notes = _native.replay(str(path), seed=seed, cmdline=cmdline, fit=fit, **machine)
    report = json.loads(text)
    if as_json:
        report["notes"] = notes
        return report
    frame = _frame(report)
    frame.attrs["notes"] = notes
    return frame


def conform(suites=None):
    """Runs conformance suites (``None`` for all) on the live kernel and on
    pageframe; returns the CLI's ``conform --format json`` object. Suites
    that need root or a NUMA kernel report why they were skipped."""
    return json.loads(_native.conform(suites))
