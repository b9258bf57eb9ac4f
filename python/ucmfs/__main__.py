"""``python3 -m ucmfs ...`` is the ucmcli command line (ucmfs.cli)."""

from .cli import main

raise SystemExit(main())
