"""The caching family: compilation caches restore correct models or fail cleanly (test-catalogue §7)."""
