"""Kept so ``python cli.py`` still works from a checkout; the command line lives in ``vts.cli.main``."""
from vts.cli.main import main

if __name__ == "__main__":
    main()
