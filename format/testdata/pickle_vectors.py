#!/usr/bin/env python3
"""Prints, for every Python expression read from stdin (one a line), the
length and MD5 of pickle.dumps(value, protocol=5), as "<len> <md5>". The Go
tests of package format (pickle_test.go) run it, when python3 is present,
to check their pickle encoder against Python's own."""
import hashlib
import pickle
import sys

assert pickle.HIGHEST_PROTOCOL == 5, pickle.HIGHEST_PROTOCOL
for line in sys.stdin:
    data = pickle.dumps(eval(line), protocol=5)
    print(len(data), hashlib.md5(data).hexdigest())
