"""Scripts and checks about the code itself (figures, engine reports, import contracts); not part of nnvts.

A package so that ``lint-imports`` can import the contract types of
``tools.import_contracts`` with the repository root on ``sys.path``; the
scripts still run as files (``python tools/layout_report.py``).
"""
