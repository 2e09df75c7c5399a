"""`phalanx snapshot`: read what a what-if needs from a live cluster into a folder `simulate` reads.

A tools-level package beside `live` (whose kubeconfig loading it shares), not inside it: `live` is the
scheduler that acts on a cluster, this only reads one. `kinds.py` is the table of what is read, `server.py`
the GETs, `discovery.py` which kinds are served, `clean.py` what is dropped, `capture.py` the reading and
`write.py` the files (docs/snapshot.md).
"""

from phalanx.snapshot.capture import Snapshot, capture
from phalanx.snapshot.write import check_directory, write_snapshot

__all__ = ["Snapshot", "capture", "check_directory", "write_snapshot"]
