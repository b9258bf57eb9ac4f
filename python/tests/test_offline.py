"""Tests of the parts of ucmfs that need no mount: CRC-32C, hash chain, header."""

import ast
import os
import sys
import unittest

# The package from this checkout, however the tests are started
# (python3 -m unittest discover -s python/tests from the repository root).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import ucmfs
from ucmfs import crc


class CRCTest(unittest.TestCase):
    def test_check_value(self):
        self.assertEqual(ucmfs.crc32c(b"123456789"), 0xE3069283)
        self.assertEqual(crc.crc32c_python(b"123456789"), 0xE3069283)

    def test_lanes_match_bytewise(self):
        for n in (0, 1, 1023, 1024, 1025, 4096, 65537, 2 << 20):
            data = os.urandom(n)
            want = crc._bytewise(0xFFFFFFFF, data) ^ 0xFFFFFFFF
            self.assertEqual(crc.crc32c_python(data), want, n)
            self.assertEqual(crc.crc32c_python(memoryview(data)), want, n)

    def test_continuation(self):
        data = os.urandom(100003)
        head = crc.crc32c_python(data[:40000])
        self.assertEqual(crc.crc32c_python(data[40000:], head), crc.crc32c_python(data))
        self.assertEqual(ucmfs.crc32c(data[40000:], ucmfs.crc32c(data[:40000])), ucmfs.crc32c(data))


class ImportTest(unittest.TestCase):
    def test_modules_import_one_way(self):
        """The modules of the package import each other without a cycle, at
        module level or inside a function."""
        pkg = os.path.dirname(ucmfs.__file__)
        graph = {}
        for name in os.listdir(pkg):
            if not name.endswith(".py") or name == "__init__.py":
                continue
            with open(os.path.join(pkg, name)) as f:
                tree = ast.parse(f.read())
            deps = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.level == 1:
                    deps.update([node.module] if node.module else [a.name for a in node.names])
            graph[name[:-3]] = deps

        def reaches(start, goal, seen):
            for dep in graph.get(start, ()):
                if dep == goal or (dep not in seen and reaches(dep, goal, seen | {dep})):
                    return True
            return False

        for mod in graph:
            self.assertFalse(reaches(mod, mod, {mod}), "ucmfs.%s imports itself through %s" % (mod, sorted(graph[mod])))


class HeaderTest(unittest.TestCase):
    def test_round_trip(self):
        bid = ucmfs.chain(ucmfs.meta("org/M", 1, "bfloat16", 0), 2, [1, 2, 3, 4])[1]
        payload = ucmfs.test_payload(bid, 0, 3 * 2 * 2 * 2 * 8 * 2)
        hdr = ucmfs.make_header(bid, payload, 3, 2, "bfloat16", 2, 8)
        self.assertEqual(ucmfs.BlockHeader.unpack(hdr.pack()), hdr)
        self.assertEqual(hdr.payload_crc32c, ucmfs.crc32c(payload))
        none = ucmfs.make_header(bid, payload, 3, 2, "bfloat16", 2, 8, with_crc=False)
        self.assertEqual((none.flags, none.payload_crc32c), (0, 0))

    def test_chain_is_a_chain(self):
        m = ucmfs.meta("org/M", 2, "float16", 1)
        ids = ucmfs.chain(m, 4, list(range(13)))
        self.assertEqual(len(ids), 3)  # the 1 token past the last full block has no id
        self.assertEqual(ucmfs.chain(m, 4, list(range(8))), ids[:2])


if __name__ == "__main__":
    unittest.main()


class DemoTest(unittest.TestCase):
    def test_refuses_a_path_that_is_no_mount(self):
        import tempfile

        from ucmfs.demo import demo
        with tempfile.TemporaryDirectory() as d:
            target = os.path.join(d, "mnt-typo")
            with self.assertRaises(SystemExit):
                demo(target)
            self.assertFalse(os.path.exists(target), "demo created directories under a path that is no mount")
