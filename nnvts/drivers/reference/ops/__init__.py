"""Operation implementations of the reference driver, one module per family.

Every module here is imported by ``registry.operations()``; each registers
its operations with ``@register_op``.
"""
