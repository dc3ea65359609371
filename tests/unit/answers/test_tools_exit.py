"""A process that loaded the answering tools exits quietly: the heap frozen by ``default_tools`` is handed
back at exit, so triton's nanobind bindings find nothing alive and print no "nanobind: leaked ..." lines."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

BASE_DIR = Path(__file__).resolve().parents[3]

# triton.language: the bindings torch's own imports load (sentence-transformers, torch._inductor); the
# frozen heap: what default_tools() leaves after loading the models.
FREEZE_THEN_EXIT = "import triton.language; from apps.answers.tools import _freeze_heap; _freeze_heap()"


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton (nanobind bindings) not installed")
def test_a_command_that_froze_the_heap_exits_without_nanobind_leak_lines() -> None:
    run = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", FREEZE_THEN_EXIT],
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert "nanobind: leaked" not in run.stderr
