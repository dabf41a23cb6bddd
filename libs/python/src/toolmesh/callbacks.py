"""Callback events pushed over NATS (nats-py): `toolmesh.callback.<status>.<tool>`."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
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
    """The subject for a status (`success`, `failure`, `interrupted`, `refused`, `pending`; `*` for any)
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


@asynccontextmanager
async def callback_events(
    nc: NatsClient,
    *,
    status: str = "*",
    tool: str = "*",
    queue: str = "",
    durable: str = "",
    pending_limit: int = 65536,
) -> AsyncIterator[AsyncIterator[Outcome]]:
    """Subscribes on entry (so a call made inside the block cannot be missed) and gives an async
    iterator of Outcomes:

        async with callback_events(nc, status="failure") as events:
            async for outcome in events:
                ...

    `nc` is a connected nats-py client: the bus is authenticated, so connect with the read-only
    agent credential, `await nats.connect(url, nkeys_seed=".toolmesh/bus/agent.nk")`. Without
    `durable` this is a plain subscription: events broadcast from now on, shared among
    subscribers with the same `queue`. With `durable` it is a JetStream durable pull consumer on the TOOLMESH_CALLBACK
    stream, created on first use from new events on: events published while the agent was away
    are delivered when it comes back, and each is acknowledged once the loop body that received
    it has finished.
    """
    subject = callback_subject(status, tool)
    if durable:
        from nats.js.api import ConsumerConfig, DeliverPolicy

        pull = await nc.jetstream().pull_subscribe(
            subject, durable=durable, stream=CALLBACK_STREAM, config=ConsumerConfig(deliver_policy=DeliverPolicy.NEW)
        )
        try:
            yield _pulled(pull)
        finally:
            await pull.unsubscribe()
        return
    sub = await nc.subscribe(subject, queue=queue, pending_msgs_limit=pending_limit)
    try:
        yield _pushed(sub)
    finally:
        await sub.unsubscribe()


async def _pushed(sub: Any) -> AsyncIterator[Outcome]:
    async for msg in sub.messages:
        yield Outcome.of(decode_callback_event(msg.data, msg.headers))


async def _pulled(pull: Any) -> AsyncIterator[Outcome]:
    from nats.errors import TimeoutError as NatsTimeout

    while True:
        try:
            batch = await pull.fetch(batch=16, timeout=5)
        except (NatsTimeout, asyncio.TimeoutError):
            continue
        for msg in batch:
            yield Outcome.of(decode_callback_event(msg.data, msg.headers))
            await msg.ack()


async def subscribe_callbacks(nc: NatsClient, **options: Any) -> AsyncIterator[Outcome]:
    """Yields each callback event as an Outcome (callback_events as one generator; it subscribes
    when iteration starts). Takes the same options as callback_events."""
    async with callback_events(nc, **options) as events:
        async for outcome in events:
            yield outcome
