"""Drop-in replacements for swarms' message transforms (``swarms.structs.transforms``).

Change the import and keep the rest::

    # from swarms.structs.transforms import TransformConfig, MessageTransforms
    from tightfit.compat.swarms import TransformConfig, MessageTransforms

Same names, fields, defaults and signatures (``handle_transforms`` included), checked against
swarms 16.0.3. The work is ``tightfit.fit`` with engine steps that make swarms' choices:

- ``max_messages`` (when the history is longer): the system messages, then ``head_and_tail``
  over the others: half of the free places from the start, half plus the last
  ``preserve_recent_messages`` from the end; when the recent messages alone are too many, the
  oldest of them (swarms' ``_compress_message_count``);
- over the token limit with more than 50 messages: the same, for half of the messages (swarms
  halves the history before removing by tokens);
- then ``middle_out``: messages removed one by one from the middle of the whole history,
  alternately older and newer, until it fits; the first and the last message stay (swarms'
  ``_middle_out_compress_tokens``; it does not keep ``preserve_recent_messages`` there either).

What differs from swarms, deliberately:

- the model's window comes from tightfit's registry, less the model's maximum output (at most
  4,096) unless the model has an input limit of its own (swarms takes litellm's
  ``max_input_tokens``, else a table of 14 names matched by substring); an unknown model
  raises :class:`tightfit.UnknownModel` where swarms falls back to 4,096; Claude models get no
  1,000-message limit (only ``max_messages`` limits the count);
- tokens are counted exactly for the target model, framing, tool calls and images included
  (swarms counts each content string, or the ``str()`` of list content, for the config's
  ``model_name``), so where the limit falls differs;
- messages go by whole units: a tool call keeps its results (swarms can keep one without the
  other), so a head, a tail or a removal can stop one message short;
- a history still over the budget once only the first and last messages are left has their
  texts cut in the middle, then loses them, and one whose system messages alone exceed the
  budget raises :class:`tightfit.CannotFit` (swarms returns the first and last messages over
  the limit);
- ``preserve_system_messages=False`` lets system messages go like any other (swarms keeps them
  whatever the flag says).

And where the engine has no step for swarms' rule yet:

- with an odd number of free places, swarms also keeps the one message in the middle of the
  part it drops; tightfit keeps one more message of the start instead;
- removing from the middle of an odd number of removable messages, swarms takes the newer
  neighbour of the middle one first and tightfit the older one: the gap can sit one message
  earlier;
- ``max_messages`` no larger than the number of system messages: swarms keeps the system
  messages alone, tightfit the last message besides.

``max_tokens=0`` and ``max_messages=0`` mean no limit of their own, as in swarms (where
``max_tokens=0`` means no token limit at all, tightfit still holds the model's window).
Disabled transforms return the caller's list as it is and never fail (a model tightfit does not
know is counted as ``gpt-4``, as swarms' litellm does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence

import tightfit
from tightfit import _native

__all__ = [
    "TransformConfig",
    "TransformResult",
    "MessageTransforms",
    "create_default_transforms",
    "apply_transforms_to_messages",
    "handle_transforms",
]

#: The model swarms (through litellm) counts with when it does not know the model.
_FALLBACK_COUNTER = "gpt-4"


@dataclass
class TransformConfig:
    """Configuration for message transforms (swarms' fields and defaults)."""

    enabled: bool = False
    method: str = "middle-out"
    max_tokens: Optional[int] = None
    max_messages: Optional[int] = None
    model_name: str = "gpt-4"
    preserve_system_messages: bool = True
    preserve_recent_messages: int = 2


@dataclass
class TransformResult:
    """Result of message transformation (swarms' fields)."""

    messages: List[Dict[str, Any]]
    original_token_count: int
    compressed_token_count: int
    original_message_count: int
    compressed_message_count: int
    compression_ratio: float
    was_compressed: bool


class MessageTransforms:
    """Fits messages to a model's window (or ``max_tokens``) with swarms' middle-out."""

    def __init__(self, config: TransformConfig) -> None:
        self.config = config
        # swarms' agents transform the whole history on every turn: the fitter remembers
        # each message's tokens, so a turn tokenizes only what is new
        self._fitter = tightfit.Fitter()

    def _pipeline(self, messages: Sequence[Dict[str, Any]]) -> tightfit.Pipeline:
        """swarms' choices for these messages: the engine's ``compat::swarms`` reads only their
        roles and the configuration."""
        config = self.config
        return _native.swarms_pipeline(
            messages,
            config.max_messages or 0,
            config.preserve_system_messages,
            config.preserve_recent_messages,
        )

    def transform_messages(
        self,
        messages: List[Dict[str, Any]],
        target_model: Optional[str] = None,
    ) -> TransformResult:
        """The messages fitted to the target model (``target_model``, else the config's
        ``model_name``), with the counts before and after. Disabled or empty: the caller's
        list as it is, counted."""
        model = target_model or self.config.model_name
        if not self.config.enabled or not messages:
            total = _count(messages, model)
            return TransformResult(messages, total, total, len(messages), len(messages), 1.0, False)
        # swarms' messages are OpenAI-shaped (LiteLLM's) whatever the model, and its
        # max_tokens is taken as given, past the model's window too
        result = self._fitter.fit(
            messages,
            model,
            budget=self.config.max_tokens or None,
            pipeline=self._pipeline(messages),
            format="openai",
            allow_over_window=True,
        )
        report = result.report
        return TransformResult(
            messages=result.messages,
            original_token_count=report.original_token_count,
            compressed_token_count=report.compressed_token_count,
            original_message_count=report.original_message_count,
            compressed_message_count=report.compressed_message_count,
            compression_ratio=report.compression_ratio,
            was_compressed=report.was_compressed,
        )


def _count(messages: Sequence[Dict[str, Any]], model: str) -> int:
    """The tokens of ``messages`` for ``model``; for a model tightfit does not know, with the
    counter swarms falls back to (disabled transforms never fail)."""
    if not messages:
        return 0
    try:
        return tightfit.count(messages, model, format="openai").total
    except tightfit.UnknownModel:
        return tightfit.count(messages, _FALLBACK_COUNTER, format="openai").total


def create_default_transforms(
    enabled: bool = True,
    method: str = "middle-out",
    model_name: str = "gpt-4",
) -> MessageTransforms:
    """MessageTransforms with the default configuration for ``model_name``."""
    return MessageTransforms(TransformConfig(enabled=enabled, method=method, model_name=model_name))


def apply_transforms_to_messages(
    messages: List[Dict[str, Any]],
    transforms_config: Optional[TransformConfig] = None,
    model_name: str = "gpt-4",
) -> TransformResult:
    """Applies ``transforms_config`` (the defaults, enabled, when ``None``) for ``model_name``."""
    transforms = (
        create_default_transforms(enabled=True, model_name=model_name)
        if transforms_config is None
        else MessageTransforms(transforms_config)
    )
    return transforms.transform_messages(messages, model_name)


def handle_transforms(
    transforms: MessageTransforms,
    short_memory: Any = None,
    model_name: Optional[str] = "gpt-5.4",
) -> str:
    """The task prompt swarms' ``Agent`` builds: the messages of ``short_memory`` (anything with
    ``return_messages_as_dictionary()``, such as a swarms ``Conversation``) after
    ``transforms``, as ``"role: content"`` blocks separated by blank lines."""
    messages = short_memory.return_messages_as_dictionary()
    result = transforms.transform_messages(messages, model_name)
    return "\n\n".join(f"{message['role']}: {message['content']}" for message in result.messages)
