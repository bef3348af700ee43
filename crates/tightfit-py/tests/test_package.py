"""The package as installed: typed, its stubs in step with the extension, its API exported."""

from __future__ import annotations

import ast
from importlib import resources

import tightfit
from tightfit import _native


def _stub() -> ast.Module:
    return ast.parse(resources.files("tightfit").joinpath("_native.pyi").read_text(encoding="utf-8"))


def test_the_package_is_typed() -> None:
    assert resources.files("tightfit").joinpath("py.typed").is_file()


def test_the_stub_names_every_public_name_of_the_extension() -> None:
    stub = _stub()
    declared = {node.name for node in stub.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    declared |= {node.target.id for node in stub.body if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)}
    public = {name for name in dir(_native) if not name.startswith("_")} | {"__version__"}
    assert declared == public


def test_the_stub_declares_every_public_member_of_each_class() -> None:
    for node in _stub().body:
        if isinstance(node, ast.ClassDef):
            members = {item.name for item in node.body if isinstance(item, ast.FunctionDef) and not item.name.startswith("_")}
            actual = {name for name in dir(getattr(_native, node.name)) if not name.startswith("_")}
            assert members == actual, node.name


def test_everything_in_all_is_exported() -> None:
    for name in tightfit.__all__:
        assert hasattr(tightfit, name), name
    assert tightfit.__version__ == _native.__version__
