"""Trying a sandbox once: whether its command prefix runs ``/bin/true`` on this machine, and if not, why."""

from __future__ import annotations

import subprocess

__all__ = ["works"]


def works(argv: list[str]) -> str:
    """Empty when ``argv /bin/true`` runs, else why not (the tool's last line of stderr)."""
    try:
        done = subprocess.run([*argv, "/bin/true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, timeout=10, check=False, cwd="/")
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    if done.returncode == 0:
        return ""
    lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
    return (lines[-1] if lines else f"exit status {done.returncode}")[:200]
