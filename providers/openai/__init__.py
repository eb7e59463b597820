"""OpenAI providers: the Responses API and Chat Completions (also for OpenAI-compatible servers).

Importing this package does not import the ``openai`` SDK; the first request does.
"""

from ._errors import error_from_payload, map_error
from .chat import OpenAIChatProvider
from .chat_stream import ChatStreamTranslator
from .responses import OpenAIResponsesProvider

__all__ = [
    "ChatStreamTranslator",
    "OpenAIChatProvider",
    "OpenAIResponsesProvider",
    "error_from_payload",
    "map_error",
]
