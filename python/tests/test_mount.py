"""Tests of ucmfs against a live mount: UCMFS_TEST_MNT names its mount point.

The Go integration test TestPythonPackage mounts the real binary and runs
these (``python3 -m unittest discover -s python/tests``); without the
variable they skip.
"""

import contextlib
import io
import os
import shutil
import sys
import unittest

# The package from this checkout, however the tests are started
# (python3 -m unittest discover -s python/tests from the repository root).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import ucmfs
from ucmfs import cli, demo, sparse

MNT = os.environ.get("UCMFS_TEST_MNT", "")


def fresh_model(prefix):
    """A model name no run has used (the process id and random bytes): the
    tests depend on nothing the mount held before, and leave nothing."""
    return "%s-%d-%s" % (prefix, os.getpid(), os.urandom(4).hex())


def remove_model(name):
    """rm -r of a model of the mount (a shard lists a block's sidecar
    before the block, whose unlink would remove it too)."""
    shutil.rmtree(os.path.join(MNT, name))


@unittest.skipUnless(MNT, "UCMFS_TEST_MNT is not set: no mount to test against")
class MountTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = fresh_model("py-unittest")
        os.mkdir(os.path.join(MNT, cls.model))
        cls.ids = ucmfs.chain(ucmfs.meta("org/PyTest", 1, "float16", 0), 4, list(range(4 * 6)))

    @classmethod
    def tearDownClass(cls):
        remove_model(cls.model)

    def _put(self, block_id, with_crc=True):
        payload = ucmfs.test_payload(block_id, 0, 2 * 2 * 4 * 2 * 8 * 2)
        hdr = ucmfs.make_header(block_id, payload, 2, 4, "float16", 2, 8, with_crc=with_crc)
        return ucmfs.write_block(MNT, self.model, hdr, payload), payload

    def test_blocks_lookup_and_control(self):
        ids = self.ids
        for bid in ids[:3]:
            self.assertTrue(self._put(bid)[0])
        self.assertFalse(self._put(ids[0])[0])  # EEXIST: already there
        self.assertEqual(ucmfs.lookup_prefix(MNT, self.model, ids), 3)
        self.assertEqual(ucmfs.prefix(MNT, self.model, ids), 3)
        self.assertEqual(ucmfs.exists(MNT, self.model, ids), [True] * 3 + [False] * (len(ids) - 3))
        self.assertEqual(ucmfs.prefetch(MNT, self.model, ids), (3, len(ids) - 3))
        ucmfs.flush(MNT, self.model)
        hdr, payload = ucmfs.read_block(MNT, self.model, ids[1])
        self.assertEqual(hdr.num_layers, 2)
        lo, n = hdr.layer_range(1)
        self.assertEqual(ucmfs.read_layer(MNT, self.model, ids[1], 1), payload[lo - 64:lo - 64 + n])
        xa = ucmfs.block_xattrs(ucmfs.block_path(MNT, self.model, ids[1]))
        self.assertEqual(int(xa["user.ucm.crc32c"], 16), ucmfs.crc32c(payload))

    def test_daemon_computes_the_crc_a_header_leaves_out(self):
        new, payload = self._put(self.ids[5], with_crc=False)
        self.assertTrue(new)
        xa = ucmfs.block_xattrs(ucmfs.block_path(MNT, self.model, self.ids[5]))
        self.assertEqual(int(xa["user.ucm.crc32c"], 16), ucmfs.crc32c(payload))

    def test_repr_and_topk(self):
        self._put(self.ids[4])
        rep = sparse.read_repr(MNT, self.model, self.ids[4])
        self.assertEqual((rep.header.num_layers, rep.header.num_kv_heads), (2, 2))
        hits, missing = ucmfs.topk(MNT, self.model, [1.0] * 16, self.ids[4:5], 1, 2, 8)
        self.assertEqual([h[0] for h in hits], self.ids[4:5])
        self.assertEqual(missing, [])

    def test_demo(self):
        name = fresh_model("py-demo")
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                demo.demo(MNT, name)
        finally:
            remove_model(ucmfs.escape_model(name))
        self.assertIn("longest present prefix: 3 of 4 blocks", out.getvalue())

    def test_cli_ids_from_and_messages(self):
        ids = ucmfs.chain(ucmfs.meta("org/PyTest-cli", 1, "float16", 0), 4, list(range(8)))
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), "ucmfs-py-ids-%d" % os.getpid())
        with open(path, "w") as f:
            f.write("".join(i.hex() + "\n" for i in ids))
        try:
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                for cmd in ("put", "verify"):
                    self.assertEqual(cli.main([cmd, MNT, self.model, "--ids-from", path]), 0)
                self.assertEqual(cli.main(["lookup", MNT, self.model, "--ids-from", path]), 0)
            self.assertIn("ok " + ids[1].hex(), out.getvalue())
            self.assertTrue(out.getvalue().rstrip().endswith("2"), out.getvalue())
        finally:
            os.remove(path)
        # A missing model: the daemon's own message, not a bare ENOENT.
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = cli.main(["exists", MNT, "no-such-model-here", ids[0].hex()])
        self.assertEqual(code, 3)
        self.assertIn("ENOENT", err.getvalue())
        self.assertNotIn("No such file or directory", err.getvalue())


if __name__ == "__main__":
    unittest.main()
