"""The chat messages of a prompt, written once: the generator renders them into token ids, and
attribution (``apps.provenance.layout``) renders the same messages into text to find where each
source sits among those tokens, so the two must agree exactly."""

from __future__ import annotations


def chat_messages(user: str, system: str | None = None) -> list[dict[str, str]]:
    """The system message (when there is one), then the user's."""
    messages = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": user})
    return messages
