"""What the programs share on their command lines (``train.py``, ``evaluate.py``,
``sweep.py``)."""

from __future__ import annotations

import argparse
from typing import NoReturn


class OneLineParser(argparse.ArgumentParser):
    """argparse's parser whose mistakes are one line, ``<prog>: error: <message>``, with
    exit status 2 -- the programs' rule for bad input -- instead of the usage block
    printed before it (``--help`` still shows the usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")
