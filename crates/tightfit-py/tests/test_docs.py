"""What users read cannot drift from the engine: the README's table of steps, the step classes'
keywords and documented defaults, the type stubs of the native module, and `describe()`."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import re
from pathlib import Path

import pytest

import tightfit
from tightfit import _native

ROOT = Path(__file__).resolve().parents[3]
TABLE = _native.step_table()
STEPS = {step["name"]: step for step in TABLE}
CLASSES = {
    cls.type: cls
    for cls in vars(tightfit).values()
    if isinstance(cls, type) and issubclass(cls, tightfit.Step) and cls is not tightfit.Step
}


def _generator():
    spec = importlib.util.spec_from_file_location("gen_step_docs", ROOT / "scripts" / "gen_step_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _generator()


def test_the_readme_s_table_of_steps_is_the_engine_s() -> None:
    section = GEN.section_of((ROOT / "crates" / "tightfit-py" / "README.md").read_text())
    assert section is not None, "the Python README has no generated table of steps"
    assert section == GEN.render(TABLE, GEN.step_classes()), "run scripts/gen_step_docs.py"


def test_the_table_says_what_keep_last_counts() -> None:
    # KeepLast(10) counts pairs: the README says so in the table's words
    section = GEN.render(TABLE, GEN.step_classes())
    assert "| `count` (`max_messages`, `buffer_size`) | `10` | per `measure` |" in section
    assert "| `measure` | `\"pairs\"` | choice |" in section
    assert "### `keep_last` · `tightfit.KeepLast`" in section


def test_every_engine_step_has_its_class_and_answers_to_its_aliases() -> None:
    assert sorted(CLASSES) == sorted(STEPS)
    for name, step in STEPS.items():
        cls = CLASSES[name]
        assert cls.__name__ in tightfit.steps.__all__ and cls.__name__ in tightfit.__all__, f"{cls.__name__} is not exported"
        inner = {"step": {"type": "drop_empty"}} if name == "when" else {}
        made = tightfit.Pipeline([cls(**inner)])
        for alias in step["aliases"]:
            assert tightfit.Pipeline([{"type": alias, **inner}]) == made, f"{alias} is not {name}"


@pytest.mark.parametrize("name", sorted(STEPS))
def test_each_class_s_keywords_are_the_engine_s_keys(name: str) -> None:
    cls = CLASSES[name]
    keywords = [p for p in inspect.signature(cls).parameters if p != "when"]
    keys = [key["name"] for key in STEPS[name]["keys"]]
    assert sorted(keywords) == sorted(keys), f"{cls.__name__}: keywords {keywords}, engine keys {keys}"


DEFAULT = re.compile(r"``(\w+)=(.*?)``", re.S)


@pytest.mark.parametrize("name", sorted(STEPS))
def test_each_class_documents_the_engine_s_defaults(name: str) -> None:
    cls = CLASSES[name]
    doc = inspect.getdoc(cls) or ""
    assert "Defaults:" in doc, f"{cls.__name__}'s docstring has no Defaults: line; it is:\n{GEN.docstring_defaults(STEPS[name])}"
    documented = [(key, ast.literal_eval(value)) for key, value in DEFAULT.findall(doc[doc.index("Defaults:") :])]
    table = [(key["name"], key["default"]) for key in STEPS[name]["keys"]]
    assert documented == table, f"{cls.__name__}'s Defaults: line should be:\n{GEN.docstring_defaults(STEPS[name])}"


def _stub() -> dict[str, set[str] | None]:
    """The stub's top-level names: a class maps to the names it defines, anything else to None."""
    tree = ast.parse((ROOT / "crates" / "tightfit-py" / "python" / "tightfit" / "_native.pyi").read_text())
    names: dict[str, set[str] | None] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names[node.name] = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names[node.name] = None
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = None
    return names


def _own(cls: type) -> set[str]:
    """What a native class defines that Python code calls: its methods and properties, and the
    special methods it implements (not those every object has)."""
    special = {"__init__", "__len__", "__eq__", "__int__", "__iter__", "__getitem__", "__contains__", "__bool__"}
    names = {n for n in vars(cls) if not n.startswith("__") or n in special}
    if "__new__" in vars(cls):  # a pyo3 constructor is __new__; the stub writes __init__
        names.add("__init__")
    return names


def test_the_stubs_name_what_the_native_module_exports() -> None:
    stub = _stub()
    exported = {n for n in dir(_native) if not n.startswith("__")} | {"__version__"}
    assert set(stub) == exported, f"in the stub only: {set(stub) - exported}; in the module only: {exported - set(stub)}"
    for name, members in stub.items():
        obj = getattr(_native, name)
        if members is None:
            assert not isinstance(obj, type), f"{name} is a class in the module, not in the stub"
            continue
        assert isinstance(obj, type), f"{name} is a class in the stub, not in the module"
        own = _own(obj)
        assert members == own, f"{name}: in the stub only: {members - own}; in the module only: {own - members}"


def _parameters(fn) -> list[str] | None:
    try:
        return [p for p in inspect.signature(fn).parameters if p not in ("self", "cls", "/", "*")]
    except (TypeError, ValueError):
        return None


def test_the_stubs_name_each_function_s_parameters() -> None:
    tree = ast.parse((ROOT / "crates" / "tightfit-py" / "python" / "tightfit" / "_native.pyi").read_text())
    checked = 0
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        a = node.args
        stub = [arg.arg for arg in a.posonlyargs + a.args + a.kwonlyargs]
        native = _parameters(getattr(_native, node.name))
        assert native is not None, f"{node.name}: the module gives no signature"
        assert stub == native, f"{node.name}: the stub says {stub}, the module {native}"
        checked += 1
    assert checked >= 15


PRESETS = tightfit.Pipeline.presets()


@pytest.mark.parametrize("name", PRESETS)
def test_a_preset_described_reads_back_as_the_same_pipeline(name: str) -> None:
    preset = tightfit.Pipeline.preset(name)
    assert tightfit.Pipeline.from_config(preset.to_config()) == preset
    assert tightfit.Pipeline.from_yaml(preset.describe()) == preset
    assert tightfit.Pipeline.from_toml(preset.describe("toml")) == preset
    assert tightfit.Pipeline.from_json(preset.describe("json")) == preset


@pytest.mark.parametrize("name", sorted(STEPS))
def test_every_step_described_reads_back_as_the_same_pipeline(name: str) -> None:
    cls = CLASSES[name]
    inner = {"step": tightfit.KeepLast(3)} if name == "when" else {}
    for pipeline in (
        tightfit.Pipeline([cls(**inner)]),
        tightfit.Pipeline([cls(**inner, **({} if name == "when" else {"when": {"tokens_above": 1000}}))]),
    ):
        config = pipeline.to_config()
        assert tightfit.Pipeline.from_config(config) == pipeline, config
        assert tightfit.Pipeline.from_yaml(pipeline.describe()) == pipeline, pipeline.describe()


def test_describe_is_the_configuration_a_user_writes() -> None:
    pipeline = tightfit.Pipeline([
        tightfit.DropThinking(),
        tightfit.TruncateToolResults(max_length=1000, keep="head_and_tail"),
        tightfit.KeepLast(10, measure="units", when={"tokens_above": 100_000}),
        tightfit.When(tightfit.KeepFirst(2), messages_above=50),
    ])
    assert pipeline.to_config() == {"steps": [
        {"type": "drop_thinking"},
        {"type": "truncate_tool_results", "max_length": 1000, "keep": "head_and_tail"},
        {"type": "keep_last", "measure": "units", "when": {"tokens_above": 100_000}},
        {"type": "keep_first", "when": {"messages_above": 50}},
    ]}
    assert tightfit.Pipeline.preset("swarms").describe() == "steps:\n- type: middle_out\n  keep_first: 0\n"
    assert tightfit.Pipeline.from_yaml(pipeline.describe()) == pipeline
    with pytest.raises(tightfit.ConfigError, match="syntax"):
        pipeline.describe("xml")


def test_from_config_takes_a_preset_and_names_a_bad_key() -> None:
    assert tightfit.Pipeline.from_config({"preset": "balanced"}) == tightfit.Pipeline.preset("balanced")
    with pytest.raises(tightfit.ConfigError, match=r"steps\[0\]\.max_lenght"):
        tightfit.Pipeline.from_config({"steps": [{"type": "truncate_tool_results", "max_lenght": 3}]})
