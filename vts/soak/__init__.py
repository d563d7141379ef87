"""``nnvts soak``: one long-lived driver, the same executions over and over, watched for leaks and drift.

``sampler.py`` reads the driver process's memory, descriptors and threads
from ``/proc``; ``trend.py`` fits slopes and compares latency windows;
``first_execution.py`` measures the first execution of each prepared model
against its steady state; ``engine.py`` runs the loop and the release phase;
``report.py`` prints the summary and writes the JSON report.
"""
