"""Random file operations on two directories, compared as they go.

files_ops.py SEED STEPS A B applies the same STEPS operations, chosen by
SEED, to the directory A (a files model of a ucmfs mount) and B (a plain
directory), one after the other: mkdir, rmdir, a file written whole
(directly, with O_TRUNC over an existing one, with O_EXCL, or to a
temporary name and renamed over), appended to, renamed (a file or a
directory, over another name or to a new one; or a file opened again
for writing, renamed while open, then closed), unlinked, truncated,
read, listed, stat'ed, or opened and kept open; a written descriptor
may be closed with a duplicate of it left open a while (its release
comes late, as on a busy machine), but for an empty one written under
its final name. Each
operation must give the same result on both (the same errno, the same
bytes); every 25 operations, and at the end, the two trees must hold the
same directories and files with the same bytes and sizes, and on A a
descriptor kept open reads, and fstat describes, what it read when it
was opened, whatever happened to its name since (on B, a plain
directory, an O_TRUNC rewrite changes the open file itself).
It prints the first difference and exits 1, or prints "ok N" and exits 0.
Kept in a few names and a shallow tree so that operations meet.
"""

import errno
import os
import random
import sys


def tree(root):
    """Every directory and file under root: path -> None or bytes."""
    out = {}
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        for n in dirs:
            out[os.path.normpath(os.path.join(rel, n))] = None
        for n in files:
            p = os.path.join(d, n)
            with open(p, "rb") as f:
                b = f.read()
            if os.stat(p).st_size != len(b):
                b = b + b"<size %d>" % os.stat(p).st_size
            out[os.path.normpath(os.path.join(rel, n))] = b
    return out


def call(fn):
    """fn's result, or the name of the errno it raised."""
    try:
        return ("ok", fn())
    except OSError as e:
        return ("err", errno.errorcode.get(e.errno, str(e.errno)))


class Side:
    """One directory the operations run on."""

    def __init__(self, root):
        self.root = root
        self.kept = []  # (descriptor, the bytes it read when opened)
        self.held = []  # duplicates of written descriptors, closed later

    def closing(self, fd, hold):
        """Closes fd; with hold, a duplicate of it stays open until
        release_held: the kernel sends the file's release only then, late,
        as it does after a close on a busy machine, or in a program that
        forked or dup'ed the descriptor."""
        if hold:
            self.held.append(os.dup(fd))
        os.close(fd)

    def release_held(self):
        for fd in self.held:
            os.close(fd)
        self.held = []

    def p(self, rel):
        return os.path.join(self.root, rel)

    def write(self, rel, data, how, hold):
        if how == "direct":
            fd = os.open(self.p(rel), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, data)
            finally:
                self.closing(fd, hold)
        elif how == "excl":
            fd = os.open(self.p(rel), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                self.closing(fd, hold)
        else:  # tmp + rename, as the engines write
            tmp = self.p(rel) + ".tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, data)
            finally:
                self.closing(fd, hold)
            try:
                os.replace(tmp, self.p(rel))
            except OSError:
                os.unlink(tmp)  # as the engines do
                raise
        return None

    def append(self, rel, data, hold):
        fd = os.open(self.p(rel), os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, data)
        finally:
            self.closing(fd, hold)

    def rename_open(self, x, y, flags, data, hold):
        """Opens x again for writing, writes data (maybe nothing),
        renames it to y while the descriptor is open, then closes it."""
        fd = os.open(self.p(x), flags)
        try:
            if data:
                os.write(fd, data)
            os.rename(self.p(x), self.p(y))
        finally:
            self.closing(fd, hold)

    def read(self, rel):
        with open(self.p(rel), "rb") as f:
            return f.read()

    def keep(self, rel):
        fd = os.open(self.p(rel), os.O_RDONLY)
        b = os.pread(fd, 1 << 20, 0)
        self.kept.append((fd, b))
        return len(b)

    def check_kept(self):
        for fd, b in self.kept:
            got = os.pread(fd, 1 << 20, 0)
            if got != b:
                return "a kept descriptor reads %d bytes, read %d when opened" % (len(got), len(b))
            size = os.fstat(fd).st_size
            if size != len(b):
                return "a kept descriptor's fstat says %d bytes, it reads %d" % (size, len(b))
        return None

    def close_kept(self):
        for fd, _ in self.kept:
            os.close(fd)
        self.kept = []

    def listing(self, rel):
        return sorted(os.listdir(self.p(rel)))

    def stat(self, rel):
        st = os.stat(self.p(rel))
        kind = "dir" if os.path.isdir(self.p(rel)) else "file"
        return (kind, st.st_size if kind == "file" else 0)


def main():
    seed, steps, a, b = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    rnd = random.Random(seed)
    sides = [Side(a), Side(b)]
    names = ["a", "b", "c", "d/a", "d/b", "d/e/a", "e", "e/a", "e/d/b", "f.bin"]
    dirs = ["d", "e", "d/e", "e/d", "g"]

    def any_path():
        return rnd.choice(names + dirs)

    for step in range(steps):
        op = rnd.choice(["mkdir", "rmdir", "write", "write", "write", "append", "rename", "rename",
                         "unlink", "truncate", "read", "list", "stat", "keep", "release", "renameopen"])
        data = bytes(rnd.getrandbits(8) for _ in range(rnd.choice([0, 1, 100, 5000, 70000])))
        hold = rnd.random() < 0.3
        if op == "mkdir":
            d = rnd.choice(dirs)
            args = d
            fns = [lambda s, d=d: os.mkdir(s.p(d)) for _ in sides]
        elif op == "rmdir":
            d = rnd.choice(dirs)
            args = d
            fns = [lambda s, d=d: os.rmdir(s.p(d)) for _ in sides]
        elif op == "write":
            n, how = rnd.choice(names), rnd.choice(["direct", "excl", "rename"])
            # An empty file closed while a duplicate of its descriptor is
            # open is, on the mount, one still being written (a shell's
            # `cat x > f`: semantics.md), which a plain directory does not
            # tell apart: not held.
            hold = hold and not (how == "direct" and not data)
            args = "%s %s %d bytes%s" % (n, how, len(data), " held" if hold else "")
            fns = [lambda s, n=n, how=how, hold=hold: s.write(n, data, how, hold) for _ in sides]
        elif op == "append":
            n = rnd.choice(names)
            args = n + (" held" if hold else "")
            fns = [lambda s, n=n, hold=hold: s.append(n, data, hold) for _ in sides]
        elif op == "rename":
            x, y = any_path(), any_path()
            args = x + " " + y
            fns = [lambda s, x=x, y=y: os.rename(s.p(x), s.p(y)) for _ in sides]
        elif op == "renameopen":
            x, y = rnd.choice(names), rnd.choice(names)
            how = rnd.choice(["rdwr", "append"])
            flags = os.O_RDWR if how == "rdwr" else os.O_WRONLY | os.O_APPEND
            args = "%s %s %s %d bytes%s" % (x, y, how, len(data), " held" if hold else "")
            fns = [lambda s, x=x, y=y, flags=flags, hold=hold: s.rename_open(x, y, flags, data, hold) for _ in sides]
        elif op == "unlink":
            n = rnd.choice(names)
            args = n
            fns = [lambda s, n=n: os.unlink(s.p(n)) for _ in sides]
        elif op == "truncate":
            n, size = rnd.choice(names), rnd.choice([0, 10])
            args = "%s %d" % (n, size)
            fns = [lambda s, n=n, size=size: os.truncate(s.p(n), size) for _ in sides]
        elif op == "read":
            n = rnd.choice(names)
            args = n
            fns = [lambda s, n=n: s.read(n) for _ in sides]
        elif op == "list":
            d = rnd.choice(dirs + ["."])
            args = d
            fns = [lambda s, d=d: s.listing(d) for _ in sides]
        elif op == "stat":
            x = any_path()
            args = x
            fns = [lambda s, x=x: s.stat(x) for _ in sides]
        elif op == "release":
            args = ""
            fns = [lambda s: s.release_held() for _ in sides]
        else:
            n = rnd.choice(names)
            args = n
            fns = [lambda s, n=n: s.keep(n) for _ in sides]
        got = [call(lambda fn=fn, s=s: fn(s)) for fn, s in zip(fns, sides)]
        if os.environ.get("FILES_OPS_TRACE"):
            print(step, op, args, got[1][0] if got[1][0] == "ok" else got[1][1])
        if got[0] != got[1]:
            show = [g if g[0] == "err" or not isinstance(g[1], bytes) else ("ok", "%d bytes" % len(g[1])) for g in got]
            print("step %d %s: mount %r, plain %r" % (step, op + " " + args, show[0], show[1]))
            return 1
        if step % 25 == 24 or step == steps - 1:
            ta, tb = tree(a), tree(b)
            if ta != tb:
                for k in sorted(set(ta) | set(tb)):
                    if ta.get(k, "absent") != tb.get(k, "absent"):
                        print("step %d: %s differs: mount %s, plain %s" % (step, k, summary(ta.get(k, "absent")), summary(tb.get(k, "absent"))))
                        return 1
            msg = sides[0].check_kept()
            if msg:
                print("step %d: %s" % (step, msg))
                return 1
            for s in sides:
                s.close_kept()
                s.release_held()
    print("ok %d" % steps)
    return 0


def summary(v):
    if v is None:
        return "a directory"
    if isinstance(v, str):
        return v
    return "%d bytes" % len(v)


if __name__ == "__main__":
    sys.exit(main())
