"""What a user gets from `pip install amber-serde`, checked in a fresh virtual environment.

`make test-wheel` installs the built wheel alone (no test dependencies, no index) into a new
virtual environment and runs this file with that environment's interpreter, from outside the
source tree, so that `import amber` can only find the installed package. Plain asserts, no
pytest: pytest is a test-only package, and none may be present.

Usage: python _wheel_smoke.py WORKDIR
"""

from __future__ import annotations

import array
import collections
import dataclasses
import datetime
import decimal
import fractions
import importlib.metadata
import ipaddress
import json
import pathlib
import subprocess
import sys
import uuid
from pathlib import Path

# Every package of the test, lint, fuzz and bench extras: none may be installed or imported.
TEST_ONLY = {
    "pytest",
    "_pytest",
    "hypothesis",
    "numpy",
    "attr",
    "attrs",
    "zstandard",
    "lz4",
    "ruff",
    "mypy",
    "atheris",
    "maturin",
    "msgpack",
}
# What a fresh virtual environment holds besides amber itself.
BASELINE = {"pip", "setuptools", "wheel"}
SUPPORTED = ("3.10", "3.11", "3.12", "3.13")


@dataclasses.dataclass
class Point:
    x: int
    y: float


def check_installed_package() -> None:
    import amber
    from amber import _amber

    prefix = Path(sys.prefix).resolve()
    for module in (amber, _amber):
        where = Path(module.__file__ or "").resolve()
        assert prefix in where.parents, f"{module.__name__} imported from {where}, not {prefix}"
    package = Path(amber.__file__ or "").parent
    assert (package / "py.typed").is_file(), "py.typed missing from the wheel"
    assert (package / "_amber.pyi").is_file(), "_amber.pyi missing from the wheel"
    stub = (package / "_amber.pyi").read_text(encoding="utf-8")
    assert "def dumps(" in stub and "def loads(" in stub, "the stub lacks dumps/loads"


def check_distributions() -> None:
    names = {
        d.metadata["Name"].lower().replace("_", "-") for d in importlib.metadata.distributions()
    }
    extra = names - BASELINE - {"amber-serde"}
    assert "amber-serde" in names, names
    assert not extra, f"installing the wheel pulled in {sorted(extra)}"


def check_metadata() -> None:
    import amber

    meta = importlib.metadata.metadata("amber-serde")
    assert meta["Version"] == amber.__version__, (meta["Version"], amber.__version__)
    licenses = meta.get_all("License-File") or []
    assert {"LICENSE-MIT", "LICENSE-APACHE"} <= set(licenses), licenses
    assert meta.get("License-Expression") == "MIT OR Apache-2.0", meta.get("License-Expression")
    classifiers = set(meta.get_all("Classifier") or [])
    for version in SUPPORTED:
        assert f"Programming Language :: Python :: {version}" in classifiers, version
    for url in meta.get_all("Project-URL") or []:
        lowered = url.lower()
        for placeholder in ("example.com", "example.org", "todo", "xxx", "your-", "<"):
            assert placeholder not in lowered, f"placeholder in Project-URL: {url}"
    for requirement in meta.get_all("Requires-Dist") or []:
        # every dependency belongs to an extra: a plain install needs nothing
        assert "extra ==" in requirement, f"run-time dependency: {requirement}"
    files = {str(f) for f in importlib.metadata.files("amber-serde") or []}
    assert any(f.endswith("LICENSE-MIT") for f in files), sorted(files)


def check_round_trips(workdir: Path) -> None:
    import amber

    shared = [1, 2]
    graph: dict[str, object] = {
        "ints": [0, -1, 1 << 40, 1 << 100, -(1 << 70)],
        "floats": [-0.0, 1.5, float("inf")],
        "text": ["a", "\xe9", "\u20ac", "\U0001f600", "a\ud800b"],
        "containers": (set("ab"), frozenset({1}), bytearray(b"x"), b"y"),
        "library": [
            datetime.datetime(2024, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc),
            decimal.Decimal("-1.50"),
            uuid.UUID(int=7),
            fractions.Fraction(1, 3),
            collections.OrderedDict(a=1),
            collections.deque([1], maxlen=3),
            array.array("d", [1.0, 2.0]),
            pathlib.PurePosixPath("/a/b"),
            ipaddress.ip_network("10.0.0.0/8"),
            range(1, 9, 2),
        ],
        "shared": (shared, shared),
        "point": Point(1, 2.5),
    }
    graph["self"] = graph
    data = amber.dumps(graph)
    back = amber.loads(data, types=[Point])
    assert back["self"] is back
    assert back["shared"][0] is back["shared"][1]
    assert back["point"] == Point(1, 2.5)
    assert back["library"] == graph["library"]
    assert back["text"] == graph["text"]
    try:
        amber.loads(data)
    except amber.ClassNotAllowedError:
        pass
    else:
        raise AssertionError("a class outside types= was built")

    key = amber.SigningKey(b"k" * 32)
    for compress in ("zstd", "lz4"):
        signed = amber.dumps(graph["library"], key=key, compress=compress)
        assert amber.loads(signed, key=key) == graph["library"]

    path = workdir / "events.ambs"
    with amber.StreamWriter(path) as out:
        for i in range(3):
            out.write({"i": i})
    assert [m["i"] for m in amber.iter_load(path)] == [0, 1, 2]
    amber.dump({"n": 1}, workdir / "one.amb")
    assert amber.load(workdir / "one.amb") == {"n": 1}


def check_cli(workdir: Path) -> None:
    exe = Path(sys.executable).parent / "amber"
    assert exe.is_file(), f"the amber console script is missing from {exe.parent}"

    def run(*args: str, stdin: bytes | None = None) -> bytes:
        proc = subprocess.run([str(exe), *args], input=stdin, capture_output=True, timeout=60)
        assert proc.returncode == 0, (args, proc.stdout[-2000:], proc.stderr[-2000:])
        return proc.stdout

    assert b"inspect" in run("--help")
    import amber

    assert run("--version").decode().split()[-1] == amber.__version__
    doc = json.dumps({"a": [1, 2.5, "x"], "b": None}).encode()
    (workdir / "doc.json").write_bytes(doc)
    run("from-json", str(workdir / "doc.json"), "-o", str(workdir / "doc.amb"))
    payload = (workdir / "doc.amb").read_bytes()
    assert amber.loads(payload) == {"a": [1, 2.5, "x"], "b": None}
    assert json.loads(run("to-json", str(workdir / "doc.amb"))) == json.loads(doc)
    assert b"SHORT_DICT  dict of 2 pairs" in run("inspect", str(workdir / "doc.amb"))
    assert b"payload: 18 bytes" in run("stats", str(workdir / "doc.amb"))


def check_nothing_test_only_loaded() -> None:
    # everything above ran; what it loaded is what amber needs at run time
    import amber.contrib  # noqa: F401  (the package itself imports none of the systems)

    loaded = {name.partition(".")[0] for name in sys.modules}
    assert not loaded & TEST_ONLY, sorted(loaded & TEST_ONLY)


def check_platform_tag() -> None:
    """On Linux the wheel is a manylinux2014 one (glibc 2.17), as `make wheel` builds it."""
    if not sys.platform.startswith("linux"):
        return
    wheel = importlib.metadata.distribution("amber-serde").read_text("WHEEL") or ""
    tags = [line.split(":", 1)[1].strip() for line in wheel.splitlines() if line.startswith("Tag:")]
    assert tags, f"no Tag in WHEEL: {wheel!r}"
    assert all("manylinux_2_17_" in t or "manylinux2014_" in t for t in tags), tags


def main() -> None:
    workdir = Path(sys.argv[1])
    workdir.mkdir(parents=True, exist_ok=True)
    check_installed_package()
    check_distributions()
    check_metadata()
    check_platform_tag()
    check_round_trips(workdir)
    check_cli(workdir)
    check_nothing_test_only_loaded()
    print(f"wheel smoke test passed on CPython {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
