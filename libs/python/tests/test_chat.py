"""chat(): the ServiceAgent through the Dispatcher's address, sync and asyncio.

The stack's tool agent talks to a scripted model that answers `you said: <message> (<n> user
messages)`, so the history each window keeps shows in the answer.
"""

from __future__ import annotations

import asyncio
import re

import pytest
from stack import Stack

import toolmesh


def test_chat_keeps_a_window_per_principal(stack: Stack, make_client):
    agent = make_client(stack.token("agent"))
    first = agent.chat("hello from python", chat_id="py-w1")
    assert first == toolmesh.ChatReply("you said: hello from python (1 user messages)", "py-w1", [])
    assert agent.chat("again", chat_id="py-w1").response == "you said: again (2 user messages)"
    # Another principal naming the same window has one of its own.
    other = make_client(stack.token("approver"))
    assert other.chat("hello", chat_id="py-w1").response == "you said: hello (1 user messages)"


def test_chat_opens_a_window_when_none_is_named(stack: Stack, make_client):
    reply = make_client(stack.token("agent")).chat("a new window")
    assert re.fullmatch(r"w-[0-9a-f]{12}", reply.chat_id)


def test_chat_refuses_a_bad_window_id(stack: Stack, make_client):
    with pytest.raises(toolmesh.InvalidArguments) as refused:
        make_client(stack.token("agent")).chat("hi", chat_id="not a window!")
    assert refused.value.message == "chat_id: must be 1-128 characters of A-Z a-z 0-9 _ . : -"


def test_async_chat(stack: Stack):
    async def run() -> list[toolmesh.ChatReply]:
        async with toolmesh.AsyncToolmesh(
            stack.address("dispatcher"), stack.token("agent"), **stack.client_kwargs()
        ) as client:
            return [
                await client.chat("hello from asyncio", chat_id="py-aio"),
                await client.chat("and again", chat_id="py-aio"),
            ]

    first, second = asyncio.run(run())
    assert first.response == "you said: hello from asyncio (1 user messages)"
    assert second == toolmesh.ChatReply("you said: and again (2 user messages)", "py-aio", [])
