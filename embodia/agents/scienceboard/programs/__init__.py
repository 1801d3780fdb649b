"""One module per domain: the real program behind each ScienceBoard domain (see :mod:`.base`)."""
