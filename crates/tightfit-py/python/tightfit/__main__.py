"""The ``tightfit`` command line: ``python -m tightfit`` and the ``tightfit`` console script.

The same command as the Rust binary (``tightfit count``, ``fit``, ``validate``, ``models``,
``simulate``, ``recall``, ``serve``), with the same output and exit codes: the native module
runs the command line's own code in this process, writing to the process's standard output
and error directly.
"""

from __future__ import annotations

import signal
import sys


def main() -> int:
    """Runs the command line on ``sys.argv`` and returns its exit code.

    Meant as a program's entry point: Ctrl-C is given back its default action (end the
    process), as for the binary, instead of Python's ``KeyboardInterrupt``, which could not
    interrupt the native code anyway. A closed pipe (``tightfit models | head``) ends the
    command quietly, as the binary does (Python ignores SIGPIPE, as Rust programs do).
    """
    from tightfit._native import cli_main

    # anything Python buffered goes out before the command line writes to the same descriptors
    sys.stdout.flush()
    sys.stderr.flush()
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    return cli_main(["tightfit", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
