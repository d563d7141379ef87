"""The differential family: answers that must depend on the input values."""
