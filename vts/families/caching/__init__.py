"""The caching family: compilation caches restore correct models or fail cleanly (VTS CompilationCachingTests.cpp)."""
