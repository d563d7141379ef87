"""Case data: test models decoded from specs, their lowering to the HAL, accuracy criteria, built-in models."""
