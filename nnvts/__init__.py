"""What the nnvts distribution ships besides the harness (``vts``): the bundled cases.

``nnvts/generated_tests`` is the cases of ``generated_tests/`` (a link in
the clone, package data in the wheel), so an installed nnvts finds them
without the clone (``vts.spec.bundled``).
"""

__all__: list[str] = []
