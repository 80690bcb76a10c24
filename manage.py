#!/usr/bin/env python
"""Django's command-line utility, through crawladmin.cli: a user's mistake ends in one line, not a traceback."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawladmin.settings")
    from crawladmin.cli import main as cli_main

    cli_main(sys.argv)


if __name__ == "__main__":
    main()
