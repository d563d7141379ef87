"""The memory_domain family: driver-allocated buffers and non-default shared memory (HAL 1.3)."""
