"""Runs autogen-core's own tests of its model contexts against tightfit's: before the test
module imports `autogen_core.model_context`, its four context classes are replaced by
`tightfit.compat.autogen_core`'s (the test file is autogen-core's, unchanged)."""

import autogen_core.model_context as peer

from tightfit.compat import autogen_core as ours

SWAPPED = [
    "UnboundedChatCompletionContext",
    "BufferedChatCompletionContext",
    "HeadAndTailChatCompletionContext",
    "TokenLimitedChatCompletionContext",
]

for name in SWAPPED:
    setattr(peer, name, getattr(ours, name))


def pytest_report_header(config):
    return "autogen_core.model_context contexts swapped for tightfit.compat.autogen_core's"


def pytest_collection_finish(session):
    # the swap must have reached the test module's own names
    for item in session.items:
        for name in SWAPPED:
            used = getattr(item.module, name, None)
            assert used is None or used is getattr(ours, name), f"{item.module.__name__}.{name} not swapped"
