"""Every fake driver of the test suite: deliberately broken, hostile, flaky or leaky drivers, one home."""
