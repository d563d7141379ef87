"""The NN HAL 1.3 contract in Python: enums, structures, interfaces, errors, validation.

This package is the one place the HAL contract lives; drivers, families and
the runner import it, never the other way round.
"""
