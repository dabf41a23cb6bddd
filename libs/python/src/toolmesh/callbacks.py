"""Callback events pushed over NATS (nats-py): `toolmesh.callback.<status>.<tool>`."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from toolmesh.events.v1 import events_pb2
from toolmesh.results import Outcome

if TYPE_CHECKING:
    from nats.aio.client import Client as NatsClient

TYPE_HEADER = "Toolmesh-Type"
CALLBACK_STREAM = "TOOLMESH_CALLBACK"
_PLAIN = re.compile(rb"[A-Za-z0-9_-]")


def subject_token(value: str) -> str:
    """Escapes user data as one subject token exactly like libs/nats subjectToken: bytes
    outside [A-Za-z0-9_-] become %XX (UTF-8), and the empty string is %00."""
    if value == "":
        return "%00"
    return "".join(
        chr(b) if _PLAIN.fullmatch(bytes([b])) else f"%{b:02X}" for b in value.encode("utf-8")
    )


def subject_token_decode(token: str) -> str:
    """Reverses subject_token."""
    if token == "%00":
        return ""
    out = bytearray()
    i = 0
    while i < len(token):
        if token[i] == "%":
            out.append(int(token[i + 1 : i + 3], 16))
            i += 3
        else:
            out.append(ord(token[i]))
            i += 1
    return out.decode("utf-8")


def callback_subject(status: str = "*", tool: str = "*") -> str:
    """The subject for a status (`success`, `failure`, `interrupted`, `pending`; `*` for any)
    and a tool name (`*` for any); both are escaped like the publishers escape them."""
    status_token = "*" if status == "*" else subject_token(status.lower().removeprefix("call_status_"))
    tool_token = "*" if tool == "*" else subject_token(tool)
    return f"toolmesh.callback.{status_token}.{tool_token}"


def decode_callback_event(data: bytes, headers: dict[str, str] | None = None) -> events_pb2.CallbackEvent:
    """Decodes a binary CallbackEvent payload, checking the type header when there is one."""
    kind = (headers or {}).get(TYPE_HEADER)
    expected = events_pb2.CallbackEvent.DESCRIPTOR.full_name
    if kind and kind != expected:
        raise ValueError(f"expected {expected}, got {kind}")
    return events_pb2.CallbackEvent.FromString(data)


async def subscribe_callbacks(
    nc: NatsClient,
    *,
    status: str = "*",
    tool: str = "*",
    queue: str = "",
    durable: str = "",
    pending_limit: int = 65536,
) -> AsyncIterator[Outcome]:
    """Yields each callback event as an Outcome.

    `nc` is a connected nats-py client (`await nats.connect(url)`). Without `durable` this is a
    plain subscription: events broadcast from now on, shared among subscribers with the same
    `queue`. With `durable` it is a JetStream durable pull consumer on the TOOLMESH_CALLBACK
    stream (created on first use, starting from new events): events published while the agent
    was away are delivered when it comes back, and each event is acknowledged once the loop body
    that received it has finished. Stop by breaking out.
    """
    subject = callback_subject(status, tool)
    if durable:
        async for outcome in _durable(nc, subject, durable):
            yield outcome
        return
    sub = await nc.subscribe(subject, queue=queue, pending_msgs_limit=pending_limit)
    try:
        async for msg in sub.messages:
            yield Outcome.of(decode_callback_event(msg.data, msg.headers))
    finally:
        await sub.unsubscribe()


async def _durable(nc: NatsClient, subject: str, durable: str) -> AsyncIterator[Outcome]:
    import asyncio

    from nats.errors import TimeoutError as NatsTimeout
    from nats.js.api import ConsumerConfig, DeliverPolicy

    js = nc.jetstream()
    # A new durable starts with the events published from now on, not the stream's history.
    sub = await js.pull_subscribe(
        subject, durable=durable, stream=CALLBACK_STREAM, config=ConsumerConfig(deliver_policy=DeliverPolicy.NEW)
    )
    while True:
        try:
            batch = await sub.fetch(batch=16, timeout=5)
        except (NatsTimeout, asyncio.TimeoutError):
            continue
        for msg in batch:
            yield Outcome.of(decode_callback_event(msg.data, msg.headers))
            await msg.ack()


async def next_callback(nc: NatsClient, *, status: str = "*", tool: str = "*", timeout: float = 10.0) -> Outcome:
    """The next callback event that matches, or asyncio.TimeoutError."""
    import asyncio

    sub = await nc.subscribe(callback_subject(status, tool))
    try:
        msg: Any = await sub.next_msg(timeout=timeout)
        return Outcome.of(decode_callback_event(msg.data, msg.headers))
    except Exception as error:
        if type(error).__name__ == "TimeoutError":
            raise asyncio.TimeoutError(f"no callback event on {callback_subject(status, tool)} in {timeout}s") from error
        raise
    finally:
        await sub.unsubscribe()
