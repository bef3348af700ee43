"""The command line the package installs (`tightfit`, `python -m tightfit`): the Rust binary's.

Each command is run three ways: the console script, ``python -m tightfit`` and the Rust binary
(``TIGHTFIT_BIN``, as ``scripts/test.sh`` and ``scripts/wheel_check.sh`` set it); standard
output, standard error and the exit code must be the same bytes. Part of the wheel check's
smoke tests: it needs nothing beyond the package, pytest and the binary.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tightfit

from conftest import repo_root

EXAMPLES = repo_root() / "data" / "examples"

#: Commands whose output must match the binary's, covering every exit code: success, a check
#: that found something (1), an error (2) and a usage error (2, clap's message).
COMMANDS = [
    ["--version"],
    ["--help"],
    ["count", str(EXAMPLES / "agent_session.json")],
    ["count", str(EXAMPLES / "anthropic_request.json"), "--json"],
    ["fit", str(EXAMPLES / "agent_session.json"), "--budget", "300"],
    ["fit", str(EXAMPLES / "anthropic_request.json"), "--budget", "400", "--report", "json"],
    ["validate", "-"],
    ["models", "gpt-4o"],
    ["count", str(EXAMPLES / "missing.json")],
    ["count"],
    ["no-such-command"],
]

#: A history the OpenAI rules reject (a tool result that answers no call): `validate` exits 1.
BROKEN_HISTORY = b'[{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "42"}]'


def rust_binary() -> str:
    path = os.environ.get("TIGHTFIT_BIN")
    if not path:
        pytest.fail("TIGHTFIT_BIN is not set: point it at the built binary (cargo build -p tightfit-cli)")
    if not os.access(path, os.X_OK):
        pytest.fail(f"TIGHTFIT_BIN={path!r} is not an executable file (cargo build -p tightfit-cli)")
    return path


def console_script() -> str:
    """The `tightfit` script pip wrote beside this interpreter."""
    script = Path(sys.executable).parent / "tightfit"
    assert script.is_file(), f"no console script at {script}: is the package installed from its wheel?"
    return str(script)


def run(prefix: list[str], args: list[str]) -> subprocess.CompletedProcess[bytes]:
    stdin = BROKEN_HISTORY if args[:1] == ["validate"] else b""
    return subprocess.run([*prefix, *args], input=stdin, capture_output=True, timeout=120)


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(Path(x).name for x in a) or "no arguments")
def test_the_package_command_is_the_binary(args: list[str]) -> None:
    expected = run([rust_binary()], args)
    for prefix in ([console_script()], [sys.executable, "-m", "tightfit"]):
        got = run(prefix, args)
        assert (got.returncode, got.stdout, got.stderr) == (expected.returncode, expected.stdout, expected.stderr), prefix


def test_the_exit_codes_are_the_binary_s() -> None:
    codes = {" ".join(args): run([console_script()], args).returncode for args in COMMANDS}
    assert codes["--version"] == 0
    assert codes["validate -"] == 1
    assert codes["count"] == 2
    assert codes["no-such-command"] == 2


def test_the_version_is_the_package_s() -> None:
    out = run([sys.executable, "-m", "tightfit"], ["--version"]).stdout.decode()
    assert out == f"tightfit {tightfit.__version__}\n"


def test_a_closed_pipe_ends_the_command_quietly() -> None:
    # `tightfit models | head -1`: the reader goes away after one line of thousands
    child = subprocess.Popen([console_script(), "models"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    assert child.stdout.readline().startswith(b"PROVIDER")
    child.stdout.close()
    assert child.wait(timeout=60) == 0
    assert child.stderr.read() == b""


def _ready_for_sigint(pid: int, native: bool) -> bool:
    """Whether SIGINT now has its default action in the process: it catches SIGINT no more and,
    for Python, has loaded the native module (Python catches SIGINT from its start until
    main() gives the default back, which happens after the import)."""
    if native and "_native" not in Path(f"/proc/{pid}/maps").read_text():
        return False
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return not int(line.split()[1], 16) >> (signal.SIGINT - 1) & 1
    raise AssertionError("no SigCgt line in /proc status")


@pytest.mark.parametrize("how", ["script", "binary"])
def test_ctrl_c_ends_the_command_as_it_ends_the_binary(how: str) -> None:
    # `count -` waits for standard input; Ctrl-C must end it by the signal, with no traceback
    prefix = [console_script()] if how == "script" else [rust_binary()]
    child = subprocess.Popen([*prefix, "count", "-"], stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not _ready_for_sigint(child.pid, native=how == "script"):
        assert time.monotonic() < deadline, "the command never gave SIGINT its default action"
        time.sleep(0.01)
    child.send_signal(signal.SIGINT)
    assert child.wait(timeout=60) == -signal.SIGINT
    assert child.stderr is not None and b"Traceback" not in child.stderr.read()
    assert child.stdin is not None
    child.stdin.close()
