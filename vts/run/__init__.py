"""Scheduling: the run loop, isolation, ``-j``, reruns, signals, affinity, selection, shards, durations."""
