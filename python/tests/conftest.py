"""Shared fixtures: the `pageframe` command the Python results are compared
with ($PAGEFRAME_CLI, else `pageframe` on PATH)."""

import os
import shutil

import pytest


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("PAGEFRAME_CLI") or shutil.which("pageframe")
    if not path:
        pytest.skip("no pageframe command (set PAGEFRAME_CLI)")
    return path
