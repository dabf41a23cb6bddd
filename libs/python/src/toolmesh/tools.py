"""The Python tool SDK: declare tools with @tool, serve them as ToolBackendService, register them."""

from __future__ import annotations

import asyncio
import inspect
import math
import os
import queue
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any, Callable

import grpc
from google.protobuf import timestamp_pb2

from toolmesh._common import auth_metadata
from toolmesh.backend.v1 import backend_pb2, backend_pb2_grpc
from toolmesh.callback.v1 import callback_pb2, callback_pb2_grpc
from toolmesh.common.v1 import common_pb2
from toolmesh.errors import from_rpc_error
from toolmesh.events.v1 import events_pb2
from toolmesh.registry.v1 import registry_pb2, registry_pb2_grpc
from toolmesh.structs import from_struct, to_struct

_NAME = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")
_KINDS = {
    name.removeprefix("TRACE_EVENT_KIND_"): number
    for name, number in events_pb2.TraceEventKind.items()
    if name not in ("TRACE_EVENT_KIND_UNSPECIFIED", "TRACE_EVENT_KIND_CUSTOM")
}


class ToolError(Exception):
    """A tool failure with a stable code the caller sees in CallError.code."""

    def __init__(self, code: str, message: str, details: Mapping[str, Any] | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = dict(details or {})


@dataclass(frozen=True)
class Deferred:
    """What a tool returns to finish later (``ctx.defer(work)``): the call is PENDING at once and
    ``work()``'s result is reported with the tool's own credential when it is done."""

    work: Callable[[], Mapping[str, Any]]


@dataclass(frozen=True)
class Reports:
    """The backend's own credential for reporting deferred calls: the Callback service's address,
    an API key with the role ``tool-backend``, and that key's agent id (registered as the tools'
    reporter)."""

    callback: str
    token: str
    agent_id: str


@dataclass
class ToolContext:
    """What a tool function gets besides its arguments."""

    trace_id: str
    call_id: str
    #: Who called (agent, user, roles); never a credential.
    principal: common_pb2.Principal
    #: 1 for the first attempt.
    attempt: int
    #: Milliseconds the Dispatcher still waited for this call when it started.
    deadline_ms: int
    _emit: Callable[[backend_pb2.InvokeResponse], None]
    _active: Callable[[], bool]
    _cost_micros: int = 0

    @property
    def cancelled(self) -> bool:
        """True once the Dispatcher gave up on this call (timeout, cancel) or the server stops."""
        return not self._active()

    def trace(self, kind: str, payload: Mapping[str, Any] | None = None) -> None:
        """Emits a trace event (`DATA_QUERY`, `DATA_RESULT`, or any upper-case custom name)."""
        upper = kind.upper()
        number = _KINDS.get(upper)
        now = timestamp_pb2.Timestamp()
        now.GetCurrentTime()
        event = events_pb2.BackendEvent(
            kind=number if number is not None else events_pb2.TRACE_EVENT_KIND_CUSTOM,
            custom_kind="" if number is not None else upper,
            payload=to_struct(dict(payload) if payload else None),
            time=now,
        )
        self._emit(backend_pb2.InvokeResponse(event=event))

    def report_cost(self, micros: float) -> None:
        """Adds what this call cost the tool itself (an LLM's tokens, a paid API), in millionths of
        the currency of the tool's ``price``; reported with the result and added to the call's
        cost. Negative, NaN and infinite amounts are ignored."""
        if isinstance(micros, float) and not math.isfinite(micros):
            return
        whole = round(micros)
        if whole > 0:
            self._cost_micros += whole

    def defer(self, work: Callable[[], Mapping[str, Any]]) -> Deferred:
        """Finishes the call later: return ``ctx.defer(work)`` and the call is PENDING at once; the
        outcome of ``work()`` (plain or async; raise ToolError for a failure) is reported with
        serve_tools' ``reports`` credential. For jobs that outlive a request."""
        return Deferred(work)


@dataclass(frozen=True)
class Tool:
    """A tool as the SDK serves and registers it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    fn: Callable[..., Mapping[str, Any]]
    output_schema: dict[str, Any] | None = None
    required_scopes: list[str] = field(default_factory=list)
    category: str = ""
    version: str = ""
    timeout_ms: int = 0
    idempotent: bool = False
    side_effects: bool = False
    takes_context: bool = False
    #: What a call costs: ``(currency, per_call_micros, per_second_micros)``, or None.
    price: tuple[str, int, int] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def spec(self, address: str, reporters: Sequence[str] = ()) -> registry_pb2.ToolSpec:
        """The registry spec of this tool served at host:port, reported by ``reporters``."""
        spec = registry_pb2.ToolSpec(
            reporters=list(reporters),
            name=self.name,
            version=self.version,
            description=self.description,
            category=self.category,
            input_schema=to_struct(self.input_schema),
            required_scopes=self.required_scopes,
            timeout_ms=self.timeout_ms,
            idempotent=self.idempotent,
            side_effects=self.side_effects,
            status=registry_pb2.TOOL_STATUS_ACTIVE,
            runtime=registry_pb2.Runtime(grpc=registry_pb2.GrpcRuntime(address=address)),
        )
        if self.output_schema:
            spec.output_schema.CopyFrom(to_struct(self.output_schema))
        if self.price:
            currency, per_call, per_second = self.price
            spec.price.CopyFrom(
                registry_pb2.Price(currency=currency, per_call_micros=per_call, per_second_micros=per_second)
            )
        return spec


def tool(
    *,
    name: str,
    input_schema: Mapping[str, Any],
    description: str | None = None,
    required_scopes: Sequence[str] = (),
    output_schema: Mapping[str, Any] | None = None,
    category: str = "",
    version: str = "",
    timeout_ms: int = 0,
    idempotent: bool = False,
    side_effects: bool = False,
    price: tuple[str, int, int] | None = None,
) -> Callable[[Callable[..., Mapping[str, Any]]], Tool]:
    """Declares a tool. The function (plain or async) takes (args: dict) or
    (args: dict, ctx: ToolContext) and returns the output dict; raise ToolError(code, message)
    for a failure with a code. Plain functions run on the server's worker threads.
    The description defaults to the function's docstring. ``price`` is
    ``(currency, per_call_micros, per_second_micros)``, such as ``("USD", 2000, 0)``; a tool may
    add what a call cost it with ``ctx.report_cost(micros)``."""
    if not _NAME.match(name):
        raise ValueError(f'tool name "{name}" must be 1-64 characters of [a-z0-9_.-] starting with a letter')

    def wrap(fn: Callable[..., Mapping[str, Any]]) -> Tool:
        text = description if description is not None else (fn.__doc__ or "").strip()
        if not text:
            raise ValueError(f'tool "{name}" needs a description (argument or docstring) for a model to choose it')
        arity = fn.__code__.co_argcount - (1 if hasattr(fn, "__self__") else 0)
        return Tool(
            name=name,
            description=text,
            input_schema=dict(input_schema),
            fn=fn,
            output_schema=dict(output_schema) if output_schema else None,
            required_scopes=list(required_scopes),
            category=category,
            version=version,
            timeout_ms=timeout_ms,
            idempotent=idempotent,
            side_effects=side_effects,
            takes_context=arity >= 2,
            price=price,
        )

    return wrap


_DONE = object()
_UINT64_MAX = 2**64 - 1


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _result_of(work: Callable[[], Any]) -> backend_pb2.InvokeResult:
    """Runs a tool function (or deferred work) and turns what it returns or raises into a result."""
    try:
        output = work()
        if inspect.isawaitable(output):
            output = asyncio.run(_awaited(output))
        if isinstance(output, Deferred):
            return backend_pb2.InvokeResult(pending=True)
        return backend_pb2.InvokeResult(output=to_struct(dict(output or {})))
    except ToolError as failure:
        return backend_pb2.InvokeResult(
            error=common_pb2.CallError(code=failure.code, message=failure.message, details=to_struct(failure.details))
        )
    except Exception as failure:  # a tool's own bug becomes a FAILURE outcome, not a crash
        return backend_pb2.InvokeResult(
            error=common_pb2.CallError(code="tool_error", message=f"{type(failure).__name__}: {failure}")
        )


class _Reporter:
    """Runs deferred work and reports its outcome, retrying while Callback is unreachable."""

    def __init__(self, reports: Reports):
        self._reports = reports
        self._channel = grpc.insecure_channel(reports.callback)
        self._stub = callback_pb2_grpc.CallbackServiceStub(self._channel)

    def finish(self, call_id: str, deferred: Deferred) -> None:
        result = _result_of(deferred.work)
        request = callback_pb2.ReportRequest(call_id=call_id)
        if result.HasField("error"):
            request.status = common_pb2.CALL_STATUS_FAILURE
            request.error.CopyFrom(result.error)
        else:
            request.status = common_pb2.CALL_STATUS_SUCCESS
            request.output.CopyFrom(result.output)
        metadata = auth_metadata(self._reports.token)
        for attempt in range(1, 9):
            try:
                self._stub.Report(request, timeout=10, metadata=metadata)
                return
            except grpc.RpcError as error:
                transient = error.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)  # type: ignore[attr-defined]
                if not transient or attempt == 8:
                    print(f"toolmesh sdk: could not report the outcome of call {call_id}: {error}", flush=True)
                    return
                threading.Event().wait(min(5.0, 0.1 * 2**attempt))

    def close(self) -> None:
        self._channel.close()


class _Backend(backend_pb2_grpc.ToolBackendServiceServicer):
    def __init__(self, tools: Sequence[Tool], stopping: threading.Event, reporter: _Reporter | None = None):
        self._tools = {t.name: t for t in tools}
        self._stopping = stopping
        self._reporter = reporter

    def Invoke(self, request: backend_pb2.InvokeRequest, context: grpc.ServicerContext) -> Iterator[Any]:
        served = self._tools.get(request.tool)
        if served is None:
            context.abort(
                grpc.StatusCode.NOT_FOUND,
                f'tool "{request.tool}" is not served here; served: {", ".join(sorted(self._tools))}',
            )
        out: queue.Queue[Any] = queue.Queue()
        active = lambda: context.is_active() and not self._stopping.is_set()  # noqa: E731
        ctx = ToolContext(
            trace_id=request.context.trace_id,
            call_id=request.context.call_id,
            principal=request.principal,
            attempt=request.attempt,
            deadline_ms=request.deadline_ms,
            _emit=lambda m: out.put(m) if active() else None,
            _active=active,
        )
        args = from_struct(request.arguments)

        deferred: list[Deferred] = []

        def call_tool() -> Any:
            output = served.fn(args, ctx) if served.takes_context else served.fn(args)
            if inspect.isawaitable(output):
                output = asyncio.run(_awaited(output))
            if isinstance(output, Deferred):
                if self._reporter is None:
                    raise ToolError(
                        "tool_misconfigured",
                        f'tool "{served.name}" deferred its call, but its server has no credential '
                        "to report with (serve_tools' reports argument)",
                    )
                deferred.append(output)
            return output

        def run() -> None:
            result = _result_of(call_tool)
            result.cost_micros = min(ctx._cost_micros, _UINT64_MAX)
            out.put(backend_pb2.InvokeResponse(result=result))
            out.put(_DONE)
            if deferred and self._reporter is not None:
                # The work runs on after the reply; its outcome arrives through Report.
                self._reporter.finish(ctx.call_id, deferred[0])

        threading.Thread(target=run, name=f"tool {served.name}", daemon=True).start()
        while True:
            item = out.get()
            if item is _DONE:
                return
            yield item


_HEALTH_SERVING = b"\x08\x01"  # grpc.health.v1.HealthCheckResponse{status: SERVING}


def _health_handler() -> grpc.GenericRpcHandler:
    check = grpc.unary_unary_rpc_method_handler(lambda _req, _ctx: _HEALTH_SERVING)
    return grpc.method_handlers_generic_handler("grpc.health.v1.Health", {"Check": check})


class ToolServer:
    """Tools served on a port; stop() ends it, wait() blocks until it ends."""

    def __init__(self, server: grpc.Server, port: int, address: str, tools: Sequence[Tool], stopping: threading.Event):
        self._server = server
        self._stopping = stopping
        self.port = port
        self.address = address
        self.tools = list(tools)

    def stop(self, grace: float = 2.0) -> None:
        self._stopping.set()
        self._server.stop(grace).wait()

    def wait(self) -> None:
        self._server.wait_for_termination()

    def __enter__(self) -> ToolServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_tools(
    tools: Sequence[Tool],
    *,
    port: int | None = None,
    host: str = "127.0.0.1",
    registry: tuple[str, str] | None = None,
    advertise_address: str | None = None,
    max_workers: int = 16,
    reports: Reports | None = None,
) -> ToolServer:
    """Serves the tools as toolmesh.backend.v1.ToolBackendService (plus gRPC health) and, with
    registry=(address, token), registers each one (or updates it when the name is taken).
    The port defaults to $TOOLMESH_TOOL_PORT (set by the Dispatcher for local tools), else a free one.
    With ``reports``, tools may finish later (``ctx.defer``) and report with that credential."""
    if not tools:
        raise ValueError("serve_tools needs at least one tool")
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        raise ValueError(f"tool names must be unique, got {names}")
    stopping = threading.Event()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=max_workers))
    reporter = _Reporter(reports) if reports else None
    backend_pb2_grpc.add_ToolBackendServiceServicer_to_server(_Backend(tools, stopping, reporter), server)
    server.add_generic_rpc_handlers((_health_handler(),))
    wanted = port if port is not None else int(os.environ.get("TOOLMESH_TOOL_PORT", "0"))
    bound = server.add_insecure_port(f"{host}:{wanted}")
    if bound == 0:
        raise OSError(f"cannot listen on {host}:{wanted}")
    server.start()
    address = advertise_address or f"{host}:{bound}"
    if registry:
        try:
            register_tools(tools, address, registry, reporters=[reports.agent_id] if reports else [])
        except Exception:
            server.stop(0)
            raise
    return ToolServer(server, bound, address, tools, stopping)


def register_tools(
    tools: Sequence[Tool],
    address: str,
    registry: tuple[str, str],
    timeout: float = 10.0,
    reporters: Sequence[str] = (),
) -> None:
    """Registers each tool as a gRPC runtime at address, or updates it when the name is taken."""
    registry_address, token = registry
    metadata = auth_metadata(token)
    with grpc.insecure_channel(registry_address) as channel:
        stub = registry_pb2_grpc.RegistryServiceStub(channel)
        for served in tools:
            spec = served.spec(address, reporters)
            try:
                stub.RegisterTool(registry_pb2.RegisterToolRequest(tool=spec), timeout=timeout, metadata=metadata)
            except grpc.RpcError as error:
                if error.code() != grpc.StatusCode.ALREADY_EXISTS:  # type: ignore[attr-defined]
                    raise from_rpc_error(error) from None
                try:
                    stub.UpdateTool(registry_pb2.UpdateToolRequest(tool=spec), timeout=timeout, metadata=metadata)
                except grpc.RpcError as update_error:
                    raise from_rpc_error(update_error) from None
