"""The package's namespace is its public API: `amber.__all__`, and nothing else public.

The extension's names are checked against its stubs (`_amber.pyi`), which stubtest checks
against the extension in `make lint`; so `__all__`, the stubs and the extension agree.
"""

from __future__ import annotations

import ast
import importlib
import types
from pathlib import Path

import amber
import amber._amber

STUBS = Path(amber.__file__).with_name("_amber.pyi")


def stub_all() -> list[str]:
    """The `__all__` list written in the extension's stubs."""
    tree = ast.parse(STUBS.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            assert isinstance(value, list)
            return value
    raise AssertionError("_amber.pyi has no __all__")


def public_names(module: types.ModuleType) -> set[str]:
    """Public attributes, leaving out amber's own subpackages (amber.contrib)."""
    return {
        name
        for name in dir(module)
        if not name.startswith("_")
        and not (
            isinstance(getattr(module, name), types.ModuleType)
            and getattr(module, name).__name__.startswith("amber.")
        )
    }


def test_dir_shows_exactly_the_public_api() -> None:
    assert public_names(amber) == set(amber.__all__)
    assert len(amber.__all__) == len(set(amber.__all__)), "a name is listed twice"


def test_no_helper_import_leaks_into_the_namespace() -> None:
    for leaked in ("os", "tempfile", "Any", "IO", "PathLike", "annotations"):
        assert not hasattr(amber, leaked), leaked


def test_every_public_name_of_the_extension_stubs_is_exported() -> None:
    public_stub_names = {n for n in stub_all() if not n.startswith("_")}
    assert public_stub_names <= set(amber.__all__), public_stub_names - set(amber.__all__)


def test_every_stub_name_exists_in_the_extension() -> None:
    for name in stub_all():
        assert hasattr(amber._amber, name), f"_amber.pyi lists {name}, the extension lacks it"


def test_every_exported_name_comes_from_a_module_that_declares_it() -> None:
    """Each name of `amber.__all__` is declared public where it is defined: in the stubs for
    the extension, in the `__all__` of the Python module otherwise."""
    declared = set(stub_all())
    for module_name in ("amber._stream", "amber._files", "amber._classes"):
        module = importlib.import_module(module_name)
        declared |= set(getattr(module, "__all__", ()))
    assert set(amber.__all__) <= declared, set(amber.__all__) - declared


def test_exported_names_are_the_extensions_own_objects() -> None:
    for name in stub_all():
        if not name.startswith("_"):
            assert getattr(amber, name) is getattr(amber._amber, name), name
