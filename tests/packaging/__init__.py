"""nnvts as a vendor installs it: the wheel, in a fresh virtual environment, away from the clone."""
