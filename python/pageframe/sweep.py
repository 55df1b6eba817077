"""Parameter sweeps: every point of a spec's seeds x parameters x machine
shapes, one deterministic run each, gathered into one table
(``results.csv``, and ``results.parquet`` when pyarrow is installed) and a
report page (``index.html``) in the results directory.

Locally the points run on a thread pool in the extension (every core);
with Ray they run as Ray tasks, one per point, on whatever cluster
``ray.init`` joined. Both use the library's own point runner and record
files, so a sweep started one way resumes the other way: points already
done are skipped, failed points run again.

From the shell: ``python -m pageframe.sweep [--ray ADDRESS] [--out DIR]
[--jobs N] SPEC.toml`` (``pageframe sweep --ray ADDRESS`` runs this).
``--ray local`` starts a local Ray instance.
"""

import argparse
import json
import os
import sys

from . import _native, _progress


def _load(spec):
    """(source, text) of a spec path."""
    with open(spec, encoding="utf-8") as handle:
        return str(spec), handle.read()


def _default_out(spec):
    stem = os.path.splitext(os.path.basename(str(spec)))[0]
    return f"{stem}-results"


def _run_on_ray(source, text, out, progress):
    """Runs the pending points as Ray tasks on the connected cluster."""
    import ray

    # One CPU per task, so each point runs its parallel parts on one thread.
    @ray.remote(num_cpus=1)
    def point(source, text, index):
        from pageframe import _native as native

        return native.sweep_run_point(source, text, index, threads=1)

    keys = _native.sweep_keys(source, text)
    pending = _native.sweep_pending(source, text, out)
    os.makedirs(out, exist_ok=True)
    refs = {point.remote(source, text, index): index for index in pending}
    failed = 0
    done = 0
    while refs:
        ready, _ = ray.wait(list(refs), num_returns=1)
        for ref in ready:
            index = refs.pop(ref)
            try:
                record = ray.get(ref)
            except Exception as err:  # a lost worker, a task that could not run
                record = json.dumps(
                    {
                        "key": keys[index],
                        "status": "error",
                        "error": f"ray: {str(err).splitlines()[0] if str(err) else type(err).__name__}",
                        "seconds": 0.0,
                        "report": None,
                    }
                )
            if json.loads(record)["status"] != "ok":
                failed += 1
            _native.sweep_store(out, record)
            done += 1
            if progress is not None:
                progress(done, len(pending))
    return failed


def _write_parquet(table, path):
    """results.csv as Parquet (text columns as strings), if pyarrow is here."""
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return None
    import pandas

    frame = pandas.read_csv(table)
    for column in frame.columns:
        if frame[column].dtype == object:
            frame[column] = frame[column].astype("string")
    frame.to_parquet(path, index=False)
    return path


def run_sweep(spec, out=None, ray=None, jobs=None, progress=None):
    """Runs the sweep of ``spec`` (a path) into ``out`` and returns its table
    as a DataFrame (``attrs``: ok, failed, missing counts, file paths).

    ``ray``: ``None`` runs on local threads (``jobs``, default every core);
    ``True`` uses the Ray cluster already joined with ``ray.init()`` (or
    starts a local one); a string is an address for ``ray.init``
    (``"local"`` starts a new local instance).
    """
    import pandas

    source, text = _load(spec)
    out = out or _default_out(spec)
    progress = _progress(progress, "sweep")
    _native.sweep_keys(source, text)  # the whole spec is checked before anything runs
    if ray is None:
        os.makedirs(out, exist_ok=True)
        _native.sweep_run_local(source, text, out, jobs=jobs, progress=progress)
    else:
        import ray as ray_module

        if not ray_module.is_initialized():
            if ray is True or ray == "local":
                ray_module.init()
            else:
                ray_module.init(address=ray)
        _run_on_ray(source, text, out, progress)
    table, page, ok, failed, missing = _native.sweep_gather(source, text, out)
    parquet = _write_parquet(table, os.path.join(out, "results.parquet"))
    frame = pandas.read_csv(table)
    frame.attrs.update(
        {
            "ok": ok,
            "failed": failed,
            "missing": missing,
            "table": str(table),
            "page": str(page),
            "parquet": parquet,
        }
    )
    return frame


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m pageframe.sweep", description=__doc__.split("\n\n")[0])
    parser.add_argument("spec", help="the sweep spec (TOML)")
    parser.add_argument("--out", help="results directory (default: SPEC name + -results)")
    parser.add_argument("--ray", metavar="ADDRESS", help="run on the Ray cluster at ADDRESS (`local`: a new local instance)")
    parser.add_argument("--jobs", type=int, help="local threads (default: every core)")
    args = parser.parse_args(argv)
    try:
        frame = run_sweep(args.spec, out=args.out, ray=args.ray, jobs=args.jobs)
    except (OSError, ValueError) as err:
        print(f"pageframe: {getattr(err, 'strerror', None) or err}", file=sys.stderr)
        return 2
    attrs = frame.attrs
    total = attrs["ok"] + attrs["failed"] + attrs["missing"]
    extra = f", parquet {attrs['parquet']}" if attrs["parquet"] else ""
    print(
        f"{total} points: {attrs['ok']} ok, {attrs['failed']} failed; "
        f"table {attrs['table']}{extra}, page {attrs['page']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
