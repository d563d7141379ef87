"""The fuzz_replay family: re-send a saved fuzz input (``nnvts fuzz --save-dir``) to the driver."""
