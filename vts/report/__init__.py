"""Every reader and writer of results: the stream and its one reader, terminal and file reports, merge, baselines."""
