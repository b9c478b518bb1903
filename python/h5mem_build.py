"""The PEP 517 backend of pyproject.toml: builds the h5mem wheel from the
extension the repository's build made, with the standard library only.

The wheel holds h5mem/__init__.py, h5mem/h5mem.so and h5mem-mcp (installed
in the environment's bin/).  By default `make h5mem.so h5mem-mcp` runs first
in the configured tree, so the wheel carries what the sources build today;
H5MEM_SO (and H5MEM_MCP) name ready-built files instead.
"""
import base64
import hashlib
import os
import re
import subprocess
import sysconfig
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _version():
    with open(os.path.join(ROOT, "configure.ac"), encoding="utf-8") as f:
        m = re.search(r"AC_INIT\(\[h5mem\],\s*\[([^\]]+)\]", f.read())
    if not m:
        raise RuntimeError("h5mem_build: no AC_INIT version in configure.ac")
    return m.group(1)


def _built():
    """The extension and the MCP server to package: (so, mcp or None)."""
    so = os.environ.get("H5MEM_SO")
    if so:
        mcp = os.environ.get("H5MEM_MCP")
    else:
        if not os.path.exists(os.path.join(ROOT, "Makefile")):
            raise RuntimeError("h5mem_build: the tree is not configured; run scripts/bootstrap "
                               "(it installs the build's Debian packages and builds), then pip install .")
        subprocess.run(["make", "-C", ROOT, "h5mem.so", "h5mem-mcp"], check=True)
        so = os.path.join(ROOT, "h5mem.so")
        mcp = os.path.join(ROOT, "h5mem-mcp")
    if not os.path.isfile(so):
        raise RuntimeError("h5mem_build: %s does not exist" % so)
    if mcp and not os.path.isfile(mcp):
        raise RuntimeError("h5mem_build: %s does not exist" % mcp)
    return so, mcp


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    so, mcp = _built()
    tag = "py3-none-" + re.sub(r"[-.]", "_", sysconfig.get_platform())
    dist = "h5mem-%s" % version
    with open(os.path.join(ROOT, "python", "h5mem", "__init__.py"), encoding="utf-8") as f:
        init = f.read().replace("@VERSION@", version).encode()
    with open(so, "rb") as f:
        so_bytes = f.read()
    files = [("h5mem/__init__.py", init, 0o644), ("h5mem/h5mem.so", so_bytes, 0o755)]
    if mcp:
        with open(mcp, "rb") as f:
            files.append((dist + ".data/scripts/h5mem-mcp", f.read(), 0o755))
    meta = ("Metadata-Version: 2.1\nName: h5mem\nVersion: %s\n"
            "Summary: An AI agent's memory in one HDF5 file, queried with SQL (a SQLite extension)\n"
            "Requires-Python: >=3.7\n" % version).encode()
    wheel = ("Wheel-Version: 1.0\nGenerator: h5mem_build\nRoot-Is-Purelib: false\nTag: %s\n" % tag).encode()
    files.append((dist + ".dist-info/METADATA", meta, 0o644))
    files.append((dist + ".dist-info/WHEEL", wheel, 0o644))
    record = "\n".join([_record_line(n, d) for n, d, _ in files] + [dist + ".dist-info/RECORD,,", ""])
    files.append((dist + ".dist-info/RECORD", record.encode(), 0o644))

    name = "%s-%s.whl" % (dist, tag)
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for n, data, mode in files:
            info = zipfile.ZipInfo(n, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return name


def build_sdist(sdist_directory, config_settings=None):
    raise RuntimeError("h5mem_build: the source distribution is `make dist` (autotools), "
                       "which needs no Python")
