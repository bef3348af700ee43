"""Drop-in replacements for swarms' message transforms (``swarms.structs.transforms``).

Change the import and keep the rest::

    # from swarms.structs.transforms import TransformConfig, MessageTransforms
    from tightfit.compat.swarms import TransformConfig, MessageTransforms

Same names, fields and defaults. The work is ``tightfit.fit`` with the engine's
``middle_out`` step (keeping system messages and the last ``preserve_recent_messages``
messages, removing from the middle until the history fits), after a ``head_and_tail`` step
when a message limit is set. What differs from swarms, deliberately:

- the model's window comes from tightfit's registry (``gpt-4o`` has 128,000 tokens; swarms'
  table matches ``gpt-4`` inside ``gpt-4o`` and gives 8,192), an unknown model raises
  :class:`tightfit.UnknownModel` instead of a silent 4,096, and without ``max_tokens`` the
  model's maximum output (at most 4,096) is left free for the reply;
- tokens are counted exactly for the model, framing, tool calls and images included (swarms
  counts each content string, or the ``str()`` of list content);
- tool calls keep their results (swarms can drop one without the other), and a history whose
  protected messages alone exceed the budget raises :class:`tightfit.CannotFit`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

import tightfit
from tightfit.steps import HeadAndTail, MiddleOut

__all__ = [
    "TransformConfig",
    "TransformResult",
    "MessageTransforms",
    "create_default_transforms",
    "apply_transforms_to_messages",
]


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
    """Fits messages to a model's window (or ``max_tokens``) with middle-out removal."""

    def __init__(self, config: TransformConfig) -> None:
        self.config = config

    def _pipeline(self) -> tightfit.Pipeline:
        config = self.config
        steps: list[tightfit.Step] = []
        if config.max_messages is not None:
            head = config.max_messages // 2
            steps.append(
                HeadAndTail(
                    head,
                    config.max_messages - head,
                    measure="messages",
                    keep_system=config.preserve_system_messages,
                    keep_newest_user_turn=False,
                    when={"messages_above": config.max_messages},
                )
            )
        steps.append(
            MiddleOut(
                keep_first=0,
                keep_recent=config.preserve_recent_messages,
                keep_system=config.preserve_system_messages,
            )
        )
        return tightfit.Pipeline(steps)

    def transform_messages(
        self,
        messages: List[Dict[str, Any]],
        target_model: Optional[str] = None,
    ) -> TransformResult:
        """The messages fitted to the target model (``target_model``, else the config's
        ``model_name``), with the counts before and after. Disabled or empty: the messages as
        they are, counted."""
        model = target_model or self.config.model_name
        if not self.config.enabled or not messages:
            total = tightfit.count(messages, model).total if messages else 0
            return TransformResult(list(messages), total, total, len(messages), len(messages), 1.0, False)
        result = tightfit.fit(messages, model, budget=self.config.max_tokens, pipeline=self._pipeline())
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
