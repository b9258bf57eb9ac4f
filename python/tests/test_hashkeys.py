"""Tests of ucmfs.hashkeys against the golden vectors of docs/format.md 2.1
and 2.2 (the Go tests of package format hold the same values)."""

import sys
import os
import unittest

# The package from this checkout, however the tests are started
# (python3 -m unittest discover -s python/tests from the repository root).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import ucmfs

META = "meta-llama/Llama-3.1-8B:1:bfloat16:0"
TOKENS = list(range(1, 11))


class KeysTest(unittest.TestCase):
    def ids(self, **kw):
        return [i.hex() for i in ucmfs.chain_keys(META, 4, TOKENS, ucmfs.Keys(**kw))]

    def test_golden(self):
        self.assertEqual(self.ids(), ["569d97e717439e91327f78b6bd995559", "587a92f328ceeef39b1f7930aeac4775"])
        self.assertEqual(self.ids(), [i.hex() for i in ucmfs.chain(META, 4, TOKENS)])
        self.assertEqual(self.ids(salt="x"), ["61cc9a136b8286c70f44026e96e8e5cd", "f5e04e397222ead1120c3fd14ec7e3fe"])
        # bytes are taken as the str's UTF-8 (Keys(salt=b"x") raised AttributeError).
        self.assertEqual(self.ids(salt=b"x"), self.ids(salt="x"))
        self.assertEqual(self.ids(lora=b"x"), self.ids(lora="x"))
        self.assertEqual(self.ids(lora="x"), ["3ef57efff12218ff82433d66ae8b6343", "f3325880a7473cbeb148d27bf8f49944"])
        self.assertEqual(self.ids(group=0), ["d6e4281584dc1fbd4b573df84f2df3cc", "b8c7775669de05c372973928f083abf5"])
        self.assertEqual(self.ids(group=1), ["0d4de64d103ed99926b0c66b0f374f3c", "3612907df674e015fefd3f6f58eb4f16"])
        self.assertEqual(self.ids(mm=(("img", 5),)), ["569d97e717439e91327f78b6bd995559", "225bcd81380428db234fa27bd5d8a0ef"])
        self.assertEqual(self.ids(salt="tenant-a", lora="sql-adapter", mm=(("f00d", 6), ("cafe", 1)),
                                  embeds=("", "e1"), group=2),
                         ["dcfa7f7f632b055fff373290a6caee00", "566fa14f3c62d30b734cf32e836c3d75"])

    def test_parse_mm(self):
        self.assertEqual(ucmfs.parse_mm("sha256:ab@cd@17"), ("sha256:ab@cd", 17))
        for bad in ("", "abc", "@5", "abc@", "abc@-1", "abc@x"):
            with self.assertRaises(ValueError):
                ucmfs.parse_mm(bad)


class UCMTest(unittest.TestCase):
    def ids(self, tp, rank, mla=False):
        return [i.hex() for i in ucmfs.ucm_chain("meta-llama/Llama-3.1-8B", tp, "torch.bfloat16", rank, 4, TOKENS, mla)]

    def test_golden(self):
        self.assertEqual(ucmfs.ucm_seed("meta-llama/Llama-3.1-8B", 1, "torch.bfloat16").hex(),
                         "4d0cf2fe57eb92d6b973cc8eeedeb601")
        self.assertEqual(self.ids(1, 0), ["70d041f7bf6e6481271587bc0a8ee4d3", "969255022c1273531fb7cd54f9e5fec2"])
        self.assertEqual(self.ids(2, 0), ["628c1e0d4e7e6829589e0eaf749dd8c5", "db0a889e312cf9372b778649c4d5774f"])
        self.assertEqual(self.ids(2, 1), ["3d8389ffc4e6e43e56ef833ae322409e", "48a08eecf7f2496100304c63fdd0a9c9"])
        self.assertEqual(self.ids(2, 1, mla=True), self.ids(2, 0))


if __name__ == "__main__":
    unittest.main()
