"""The asyncio toolmesh client (grpc.aio)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from typing import Any, Callable

import grpc
import grpc.aio

from toolmesh._common import (
    CHAT_TIMEOUT_S,
    DISPATCH_GRACE_S,
    CallLike,
    RetryPolicy,
    auth_metadata,
    batch_request,
    dispatch_request,
    export_request,
    list_tools_request,
    Addresses,
    address_list,
    channel_target,
    service_address,
)
from toolmesh.agent.v1 import agent_pb2, agent_pb2_grpc
from toolmesh.callback.v1 import callback_pb2, callback_pb2_grpc
from toolmesh.dispatcher.v1 import dispatcher_pb2, dispatcher_pb2_grpc
from toolmesh.errors import DeadlineExceeded, from_rpc_error
from toolmesh.permission.v1 import permission_pb2_grpc
from toolmesh.registry.v1 import registry_pb2_grpc
from toolmesh.results import CallResult, ChatReply, Outcome, ToolInfo
from toolmesh.structs import from_struct


class AsyncToolmesh:
    """The asyncio flavour of toolmesh.Toolmesh: the same operations, awaited."""

    def __init__(
        self,
        address: Addresses,
        token: str,
        *,
        registry: Addresses | None = None,
        permission: Addresses | None = None,
        callback: Addresses | None = None,
        default_timeout: float = 30.0,
        retry: RetryPolicy = RetryPolicy(),
        channel_options: list[tuple[str, Any]] | None = None,
    ):
        self._metadata = auth_metadata(token)
        self.default_timeout = default_timeout
        self.retry = retry
        self._channels: dict[str, grpc.aio.Channel] = {}

        def channel(addr: Addresses) -> grpc.aio.Channel:
            key = ",".join(address_list(addr))
            if key not in self._channels:
                target, balanced = channel_target(key)
                self._channels[key] = grpc.aio.insecure_channel(target, options=[*(channel_options or []), *balanced])
            return self._channels[key]

        self.dispatcher = dispatcher_pb2_grpc.DispatcherServiceStub(channel(address))
        # The tool agent's RPCs, at the Dispatcher's address, which forwards them.
        self.agent = agent_pb2_grpc.AgentServiceStub(channel(address))
        self.registry = registry_pb2_grpc.RegistryServiceStub(channel(service_address(address, "registry", registry)))
        self.permission = permission_pb2_grpc.PermissionServiceStub(
            channel(service_address(address, "permission", permission))
        )
        self.callback = callback_pb2_grpc.CallbackServiceStub(channel(service_address(address, "callback", callback)))

    async def close(self) -> None:
        for ch in self._channels.values():
            await ch.close()
        self._channels.clear()

    async def __aenter__(self) -> AsyncToolmesh:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def invoke(self, method: Callable[..., Any], request: Any, timeout: float | None = None) -> Any:
        """Runs a unary RPC of any stub with the token, a deadline and UNAVAILABLE retries."""
        deadline = time.monotonic() + (timeout or self.default_timeout)
        attempt = 0
        while True:
            attempt += 1
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DeadlineExceeded(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline passed while retrying")
            try:
                return await method(request, timeout=remaining, metadata=self._metadata)
            except grpc.RpcError as error:
                failure = from_rpc_error(error)
                if failure.code != grpc.StatusCode.UNAVAILABLE or attempt >= self.retry.attempts:
                    raise failure from None
                pause = self.retry.backoff(attempt)
                if time.monotonic() + pause >= deadline:
                    raise failure from None
                await asyncio.sleep(pause)

    async def dispatch(
        self,
        tool: str,
        args: Mapping[str, Any] | None = None,
        *,
        trace_id: str = "",
        parent_id: str = "",
        call_id: str = "",
        idempotency_key: str = "",
        timeout: float | None = None,
    ) -> CallResult:
        """Runs one tool call. `timeout` (seconds) caps the tool's run; the RPC gets a little more."""
        request = dispatch_request(
            tool,
            args,
            trace_id=trace_id,
            parent_id=parent_id,
            call_id=call_id,
            idempotency_key=idempotency_key,
            timeout=timeout,
        )
        rpc_timeout = timeout + DISPATCH_GRACE_S if timeout else None
        return CallResult.of(await self.invoke(self.dispatcher.Dispatch, request, rpc_timeout))

    async def batch(
        self, calls: Iterable[CallLike], *, trace_id: str = "", timeout: float | None = None
    ) -> list[CallResult]:
        """Runs many calls; results come in request order, refusals included (status REFUSED)."""
        request, calls_timeout = batch_request(calls, trace_id)
        rpc_timeout = timeout or (calls_timeout + DISPATCH_GRACE_S if calls_timeout else None)
        response = await self.invoke(self.dispatcher.DispatchBatch, request, rpc_timeout)
        return [CallResult.of(r) for r in response.results]

    async def chat(self, message: str, *, chat_id: str = "", timeout: float | None = None) -> ChatReply:
        """Says `message` to the ServiceAgent in your window `chat_id` (a new one when empty) and
        returns its answer; as Toolmesh.chat, sent once and never retried."""
        request = agent_pb2.ChatRequest(message=message, chat_id=chat_id)
        try:
            response = await self.agent.Chat(
                request, timeout=timeout or CHAT_TIMEOUT_S, metadata=self._metadata
            )
        except grpc.RpcError as error:
            raise from_rpc_error(error) from None
        return ChatReply.of(response)

    async def cancel(self, call_id: str, reason: str = "") -> None:
        """Interrupts a running call of yours; NotFound when it is not running."""
        await self.invoke(self.dispatcher.Cancel, dispatcher_pb2.CancelRequest(call_id=call_id, reason=reason))

    async def wait_outcome(self, call_id: str, *, timeout: float | None = None) -> Outcome:
        """Waits (Callback Watch) for the final outcome of a call, for example a PENDING one.

        Final is SUCCESS, FAILURE, INTERRUPTED, or REFUSED for a call held for approval that was
        denied or ended unrun (`reason` approval_denied, approval_expired …).
        """
        request = callback_pb2.WatchRequest(call_id=call_id)
        deadline = time.monotonic() + (timeout or self.default_timeout)
        attempt = 0
        while True:
            attempt += 1
            stream = self.callback.Watch(
                request, timeout=max(0.001, deadline - time.monotonic()), metadata=self._metadata
            )
            try:
                async for response in stream:
                    outcome = Outcome.of(response.event)
                    if outcome.final:
                        stream.cancel()
                        return outcome
            except grpc.RpcError as error:
                failure = from_rpc_error(error)
                if failure.code != grpc.StatusCode.UNAVAILABLE or attempt >= self.retry.attempts:
                    raise failure from None
                await asyncio.sleep(self.retry.backoff(attempt))
                continue
            raise DeadlineExceeded(
                grpc.StatusCode.DEADLINE_EXCEEDED, f"the watch of call {call_id} ended without a final outcome"
            )

    async def list_tools(self, *, category: str = "", keyword: str = "", group: str = "") -> list[ToolInfo]:
        """Every tool you may call (all pages), optionally filtered."""
        tools: list[ToolInfo] = []
        token = ""
        while True:
            page = await self.invoke(self.registry.ListTools, list_tools_request(category, keyword, group, token))
            tools += [ToolInfo.of(t) for t in page.tools]
            token = page.next_page_token
            if not token:
                return tools

    async def export_tool_schemas(
        self, format: str = "openai", *, group: str = "", names: Iterable[str] = (), include_deprecated: bool = False
    ) -> list[dict[str, Any]]:
        """Tool definitions for a model provider: `openai`, `anthropic` or `mcp`."""
        response = await self.invoke(
            self.registry.ExportToolSchemas, export_request(format, group, names, include_deprecated)
        )
        return [from_struct(t.definition) for t in response.tools]
