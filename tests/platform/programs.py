"""What the program tests share: loading a program of ``platform/`` (not a package, see
DESIGN.md) as a module, and capping a child program's memory."""

from __future__ import annotations

import importlib.util
import resource
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_program(name: str) -> ModuleType:
    """``platform/<name>.py`` imported by its path, as module ``<name>_program``."""
    spec = importlib.util.spec_from_file_location(
        f"{name}_program", ROOT / "platform" / f"{name}.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cap_memory() -> None:
    """``preexec_fn`` of a child program: 4 GB of address space, so a size check that
    regressed ends in a MemoryError in the child instead of taking the machine's memory."""
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
