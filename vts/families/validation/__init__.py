"""The validation family: malformed models and requests must be refused with INVALID_ARGUMENT."""
