"""What the nnvts distribution ships besides the harness (``vts``): its drivers and the bundled cases.

``nnvts.drivers`` holds the reference driver, the engine drivers, the
template and the C sample (found by entry point, group ``nnvts.drivers``;
the harness never imports them).  They live under the distribution's own
name so that installing nnvts adds no top-level ``drivers`` package to
shadow a vendor's.  ``nnvts/generated_tests`` is the cases of
``generated_tests/`` (a link in the clone, package data in the wheel), so
an installed nnvts finds them without the clone (``vts.spec.bundled``).
"""

__all__: list[str] = []
