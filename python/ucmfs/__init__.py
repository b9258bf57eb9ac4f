"""ucmfs: the Python client of the ucmfs KV-cache block filesystem.

Standard library only. The names of ucmfs.client are re-exported here, so
``import ucmfs as uc`` then ``uc.chain(...)``, ``uc.write_block(...)``,
``uc.exists(...)`` and so on. The submodules:

  * ucmfs.client: hash chain, UCMB header, block I/O, xattrs, the control
    plane (lookup, prefetch, flush) and the GPU data path;
  * ucmfs.hashkeys: the chain with extra keys (salt, LoRA, multimodal,
    prompt embeddings, KV-cache group) and UCM's own block ids;
  * ucmfs.sparse: sparse-attention sidecars and TopK sessions (read_repr
    and topk are re-exported here);
  * ucmfs.crc: CRC-32C (a native module when installed, else fast pure Python);
  * ucmfs.demo: the example, run by ``ucmcli demo MOUNTPOINT``;
  * ucmfs.cli: the ``ucmcli`` command line.

See python/README.md and docs/control.md.
"""

from . import client, crc, hashkeys, sparse
from .client import *  # noqa: F401,F403  the client's public names
from .client import __all__ as _client_all
from .hashkeys import *  # noqa: F401,F403
from .hashkeys import __all__ as _hashkeys_all
from .sparse import read_repr, topk

# Imports point one way: client <- hashkeys, sparse, demo, cli; nothing
# below imports this package back.

__version__ = "0.1.0"
__all__ = ["client", "crc", "hashkeys", "sparse", "__version__"] + list(_client_all) + list(_hashkeys_all) + ["read_repr", "topk"]
