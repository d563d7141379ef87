"""The faces of nnvts: every click command, its parameter types and exit codes (the only code that sees argv)."""
