"""The out-of-process driver protocol (docs/protocol.md): framing, client proxies, driver host, host processes.

Light on purpose: importing ``vts.ipc`` loads nothing; ``errors`` is what
the runner needs, ``client``/``host``/``process`` are imported where used.
"""
