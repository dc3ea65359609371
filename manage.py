#!/usr/bin/env python
"""Django's command-line utility for ragkg: reads .env beside it first, as the make targets do
(scripts/with-env.sh; the environment wins, RAGKG_DOTENV=0 skips it)."""

import os
import sys
from pathlib import Path


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ragkg.settings")
    from django.core.management import execute_from_command_line

    from ragkg.env import EnvError, dotenv_load

    try:
        dotenv_load(Path(__file__).resolve().parent / ".env")
        execute_from_command_line(sys.argv)
    except EnvError as exc:
        sys.exit(f"configuration error: {exc}")


if __name__ == "__main__":
    main()
