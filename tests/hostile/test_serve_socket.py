"""``nnvts serve``'s socket is reachable by its owner only, whatever the umask."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time

from tests.ipc.conftest import ROOT, nnvts_env


def test_the_socket_is_owner_only_under_umask_000(tmp_path):
    path = tmp_path / "drv.sock"
    server = subprocess.Popen([sys.executable, "-c", f"import os, sys; os.umask(0); sys.argv = ['nnvts', 'serve', "
                               f"'--driver', 'reference', '--socket', {str(path)!r}]; from vts.cli.main import main; "
                               "main()"], cwd=ROOT, env=nnvts_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while not path.exists() and time.monotonic() < deadline and server.poll() is None:
            time.sleep(0.05)
        assert path.exists(), server.stderr.read().decode() if server.poll() is not None else "no socket"
        mode = stat.S_IMODE(os.stat(path).st_mode)
        assert mode == 0o600, oct(mode)
    finally:
        server.terminate()
        server.wait(30)
        if server.stderr:
            server.stderr.close()
