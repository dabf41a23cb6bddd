"""The synchronous toolmesh client."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any, Callable, TypeVar

import grpc

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
from toolmesh.structs import from_struct, to_struct

T = TypeVar("T")


class Toolmesh:
    """Calls tools through the toolmesh Dispatcher.

    `address` is the Dispatcher's host:port, or several replicas' (a list, or one string with
    commas): calls then go round robin to those that are up, and one retried after UNAVAILABLE
    goes to the next. The Registry, Permission and Callback services default to the (first)
    Dispatcher's host on their default ports (7101, 7102, 7104). Every RPC carries
    the bearer token and a deadline (`default_timeout` seconds unless a call says otherwise),
    and is retried only on UNAVAILABLE (bounded by `retry`, with backoff). Errors are
    ToolmeshError subclasses with details. UNAVAILABLE from the Dispatcher means the call did not
    run; a connection lost in mid-call may have run it, so give an `idempotency_key` to calls
    with side effects and a retry returns the first outcome instead of running the tool twice.
    """

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
        self._channels: dict[str, grpc.Channel] = {}

        def channel(addr: Addresses) -> grpc.Channel:
            key = ",".join(address_list(addr))
            if key not in self._channels:
                target, balanced = channel_target(key)
                self._channels[key] = grpc.insecure_channel(target, options=[*(channel_options or []), *balanced])
            return self._channels[key]

        self.dispatcher = dispatcher_pb2_grpc.DispatcherServiceStub(channel(address))
        # The tool agent's RPCs, at the Dispatcher's address, which forwards them.
        self.agent = agent_pb2_grpc.AgentServiceStub(channel(address))
        self.registry = registry_pb2_grpc.RegistryServiceStub(
            channel(service_address(address, "registry", registry))
        )
        self.permission = permission_pb2_grpc.PermissionServiceStub(
            channel(service_address(address, "permission", permission))
        )
        self.callback = callback_pb2_grpc.CallbackServiceStub(
            channel(service_address(address, "callback", callback))
        )

    def close(self) -> None:
        for ch in self._channels.values():
            ch.close()
        self._channels.clear()

    def __enter__(self) -> Toolmesh:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def invoke(self, method: Callable[..., T], request: Any, timeout: float | None = None) -> T:
        """Runs a unary RPC of any stub with the token, a deadline and UNAVAILABLE retries."""
        deadline = time.monotonic() + (timeout or self.default_timeout)
        attempt = 0
        while True:
            attempt += 1
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise DeadlineExceeded(grpc.StatusCode.DEADLINE_EXCEEDED, "deadline passed while retrying")
            try:
                return method(request, timeout=remaining, metadata=self._metadata)
            except grpc.RpcError as error:
                failure = from_rpc_error(error)
                if failure.code != grpc.StatusCode.UNAVAILABLE or attempt >= self.retry.attempts:
                    raise failure from None
                pause = self.retry.backoff(attempt)
                if time.monotonic() + pause >= deadline:
                    raise failure from None
                time.sleep(pause)

    def dispatch(
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
        return CallResult.of(self.invoke(self.dispatcher.Dispatch, request, rpc_timeout))

    def batch(self, calls: Iterable[CallLike], *, trace_id: str = "", timeout: float | None = None) -> list[CallResult]:
        """Runs many calls; results come in request order, refusals included (status REFUSED)."""
        request, calls_timeout = batch_request(calls, trace_id)
        rpc_timeout = timeout or (calls_timeout + DISPATCH_GRACE_S if calls_timeout else None)
        response = self.invoke(self.dispatcher.DispatchBatch, request, rpc_timeout)
        return [CallResult.of(r) for r in response.results]

    def run_tool_calls(
        self, message: Mapping[str, Any], *, trace_id: str = "", timeout: float | None = None
    ) -> list[dict[str, Any]]:
        """Runs the tool calls of a model's reply (OpenAI Chat `tool_calls`, OpenAI Responses
        `function_call` items or Anthropic `tool_use` blocks, as the API returned it) and returns
        the messages to append to the conversation, in the same dialect."""
        request = dispatcher_pb2.DispatchToolCallsRequest(
            message=to_struct(dict(message)), trace_id=trace_id
        )
        response = self.invoke(self.dispatcher.DispatchToolCalls, request, timeout)
        return [from_struct(m) for m in response.messages]

    def chat(self, message: str, *, chat_id: str = "", timeout: float | None = None) -> ChatReply:
        """Says `message` to the ServiceAgent in your window `chat_id` (a new one when empty) and
        returns its answer. The window is yours alone and keeps its history. Sent once, never
        retried: a lost answer may have been given. Unavailable names TOOLMESH_MODEL_URL when the
        tool agent has no model."""
        request = agent_pb2.ChatRequest(message=message, chat_id=chat_id)
        try:
            response = self.agent.Chat(request, timeout=timeout or CHAT_TIMEOUT_S, metadata=self._metadata)
        except grpc.RpcError as error:
            raise from_rpc_error(error) from None
        return ChatReply.of(response)

    def cancel(self, call_id: str, reason: str = "") -> None:
        """Interrupts a running call of yours; NotFound when it is not running."""
        self.invoke(self.dispatcher.Cancel, dispatcher_pb2.CancelRequest(call_id=call_id, reason=reason))

    def wait_outcome(self, call_id: str, *, timeout: float | None = None) -> Outcome:
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
                for response in stream:
                    outcome = Outcome.of(response.event)
                    if outcome.final:
                        stream.cancel()
                        return outcome
            except grpc.RpcError as error:
                failure = from_rpc_error(error)
                retry = failure.code == grpc.StatusCode.UNAVAILABLE and attempt < self.retry.attempts
                if not retry:
                    raise failure from None
                time.sleep(self.retry.backoff(attempt))
                continue
            raise DeadlineExceeded(
                grpc.StatusCode.DEADLINE_EXCEEDED, f"the watch of call {call_id} ended without a final outcome"
            )

    def list_tools(self, *, category: str = "", keyword: str = "", group: str = "") -> list[ToolInfo]:
        """Every tool you may call (all pages), optionally filtered."""
        tools: list[ToolInfo] = []
        token = ""
        while True:
            page = self.invoke(self.registry.ListTools, list_tools_request(category, keyword, group, token))
            tools += [ToolInfo.of(t) for t in page.tools]
            token = page.next_page_token
            if not token:
                return tools

    def export_tool_schemas(
        self, format: str = "openai", *, group: str = "", names: Iterable[str] = (), include_deprecated: bool = False
    ) -> list[dict[str, Any]]:
        """Tool definitions for a model provider: `openai`, `anthropic` or `mcp`."""
        response = self.invoke(
            self.registry.ExportToolSchemas, export_request(format, group, names, include_deprecated)
        )
        return [from_struct(t.definition) for t in response.tools]


