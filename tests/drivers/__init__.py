"""Drivers used by the self-tests: the reference driver with one deliberate fault each.

A harness is judged by what it catches, so every family's tests run these
and expect the fault to be caught in the family that should catch it.
"""
