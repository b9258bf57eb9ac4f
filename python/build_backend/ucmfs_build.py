"""ucmfs_build: the PEP 517 build backend of the ucmfs Python client.

The client is pure Python with no dependencies, so its wheel is a zip of
ucmfs/*.py plus the .dist-info files, which this module writes with the
standard library alone. pyproject.toml names it with ``requires = []``:
pip then builds and installs the package with no network and no
setuptools (which venvs of Python 3.12 and later no longer carry).
Hooks: build_wheel, build_editable (PEP 660), build_sdist and their
get_requires_* (none).
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile
from typing import Dict, List, Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "ucmfs"


def _project() -> Tuple[Dict[str, str], Dict[str, str]]:
    """The [project] strings and [project.scripts] of pyproject.toml.

    A small reader for the simple ``key = "value"`` lines this file uses
    (tomllib exists only from Python 3.11).
    """
    sections: Dict[str, Dict[str, str]] = {}
    current = ""
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            m = re.match(r"^\[([^\]]+)\]$", line)
            if m:
                current = m.group(1)
                continue
            m = re.match(r'^([A-Za-z0-9_.-]+)\s*=\s*"([^"]*)"$', line)
            if m:
                sections.setdefault(current, {})[m.group(1)] = m.group(2)
    return sections.get("project", {}), sections.get("project.scripts", {})


def _metadata() -> str:
    proj, _ = _project()
    with open(os.path.join(ROOT, proj.get("readme", "README.md")), encoding="utf-8") as f:
        readme = f.read()
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nRequires-Python: %s\n"
            "Provides-Extra: fast\nRequires-Dist: google-crc32c; extra == \"fast\"\n"
            "Description-Content-Type: text/markdown\n\n%s" % (
                proj["name"], proj["version"], proj.get("description", ""),
                proj.get("requires-python", ">=3"), readme))


def _sources() -> List[str]:
    """The package's .py files, relative to ROOT."""
    pkg = os.path.join(ROOT, PACKAGE)
    return sorted(os.path.join(PACKAGE, n) for n in os.listdir(pkg) if n.endswith(".py"))


def _dist_info_files(tag: str = "py3-none-any") -> List[Tuple[str, bytes]]:
    proj, scripts = _project()
    info = "%s-%s.dist-info" % (proj["name"], proj["version"])
    entry = "[console_scripts]\n" + "".join("%s = %s\n" % kv for kv in sorted(scripts.items()))
    wheel = "Wheel-Version: 1.0\nGenerator: ucmfs_build\nRoot-Is-Purelib: true\nTag: %s\n" % tag
    return [(info + "/METADATA", _metadata().encode()), (info + "/WHEEL", wheel.encode()),
            (info + "/entry_points.txt", entry.encode())]


def _write_wheel(directory: str, files: List[Tuple[str, bytes]]) -> str:
    proj, _ = _project()
    name = "%s-%s-py3-none-any.whl" % (proj["name"], proj["version"])
    files = files + _dist_info_files()
    record_name = "%s-%s.dist-info/RECORD" % (proj["name"], proj["version"])
    record = io.StringIO()
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            z.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.write("%s,sha256=%s,%d\n" % (path, digest, len(data)))
        record.write("%s,,\n" % record_name)
        z.writestr(record_name, record.getvalue())
    return name


def _read(rel: str) -> bytes:
    with open(os.path.join(ROOT, rel), "rb") as f:
        return f.read()


def get_requires_for_build_wheel(config_settings: Optional[dict] = None) -> List[str]:
    """Nothing to install before building."""
    return []


get_requires_for_build_editable = get_requires_for_build_wheel
get_requires_for_build_sdist = get_requires_for_build_wheel


def build_wheel(wheel_directory: str, config_settings: Optional[dict] = None,
                metadata_directory: Optional[str] = None) -> str:
    """Write the wheel into wheel_directory; returns its file name."""
    return _write_wheel(wheel_directory, [(p, _read(p)) for p in _sources()])


def build_editable(wheel_directory: str, config_settings: Optional[dict] = None,
                   metadata_directory: Optional[str] = None) -> str:
    """An editable wheel: a .pth file that puts this directory on sys.path."""
    return _write_wheel(wheel_directory, [("%s.pth" % PACKAGE, (ROOT + "\n").encode())])


def build_sdist(sdist_directory: str, config_settings: Optional[dict] = None) -> str:
    """Write the source tarball into sdist_directory; returns its file name."""
    proj, _ = _project()
    base = "%s-%s" % (proj["name"], proj["version"])
    files = ["pyproject.toml", proj.get("readme", "README.md"), "build_backend/ucmfs_build.py"] + _sources()
    with tarfile.open(os.path.join(sdist_directory, base + ".tar.gz"), "w:gz") as tar:
        for rel in files:
            tar.add(os.path.join(ROOT, rel), arcname="%s/%s" % (base, rel))
        pkg_info = _metadata().encode()
        ti = tarfile.TarInfo("%s/PKG-INFO" % base)
        ti.size = len(pkg_info)
        tar.addfile(ti, io.BytesIO(pkg_info))
    return base + ".tar.gz"
