"""Plain Python views of call results, outcomes and tools."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from toolmesh.agent.v1 import agent_pb2
from toolmesh.common.v1 import common_pb2
from toolmesh.dispatcher.v1 import dispatcher_pb2
from toolmesh.events.v1 import events_pb2
from toolmesh.registry.v1 import registry_pb2
from toolmesh.structs import from_struct


# The statuses of a call that has ended (test/vectors/outcome-words.json): REFUSED is a call held
# for approval and then denied or ended unrun; PENDING (held, or accepted by an asynchronous tool)
# is not final.
FINAL_STATUSES = frozenset({"SUCCESS", "FAILURE", "INTERRUPTED", "REFUSED"})


def status_name(status: int) -> str:
    """`SUCCESS` for CALL_STATUS_SUCCESS and so on."""
    return common_pb2.CallStatus.Name(status).removeprefix("CALL_STATUS_")


def is_final(status: str) -> bool:
    """True for the status of a call that has ended: SUCCESS, FAILURE, INTERRUPTED or REFUSED."""
    return status in FINAL_STATUSES


@dataclass(frozen=True)
class CallError:
    """Why a call did not succeed: a stable code, a sentence, and structured details."""

    code: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def of(message: common_pb2.CallError) -> CallError:
        return CallError(message.code, message.message, from_struct(message.details))


@dataclass(frozen=True)
class Cost:
    """What a call of a priced tool cost, in millionths of ``currency``: ``micros`` in all (its
    price per call and per second, and what the tool reported), ``reported_micros`` the part the
    tool reported itself (``ToolContext.report_cost``)."""

    currency: str
    micros: int
    reported_micros: int

    @property
    def amount(self) -> float:
        """The cost in units of its currency (micros / 1,000,000)."""
        return self.micros / 1_000_000

    @staticmethod
    def of(message: events_pb2.Cost) -> Cost:
        return Cost(message.currency, message.micros, message.reported_micros)


@dataclass(frozen=True)
class CallResult:
    """The answer to one dispatched call. Tool failures are results, not exceptions."""

    call_id: str
    trace_id: str
    #: SUCCESS, FAILURE, INTERRUPTED, PENDING or REFUSED (a refused call inside a batch).
    status: str
    output: dict[str, Any]
    error: CallError | None
    duration_ms: int
    attempts: int
    replayed: bool = False
    #: For a refused call inside a batch: the gRPC code name, such as `PERMISSION_DENIED`.
    refusal_code: str = ""
    #: What the call cost, for a tool with a price; None otherwise.
    cost: Cost | None = None

    @property
    def ok(self) -> bool:
        return self.status == "SUCCESS"

    @staticmethod
    def of(message: dispatcher_pb2.DispatchResponse) -> CallResult:
        return CallResult(
            call_id=message.call_id,
            trace_id=message.trace_id,
            status=status_name(message.status),
            output=from_struct(message.output),
            error=CallError.of(message.error) if message.HasField("error") else None,
            duration_ms=message.duration_ms,
            attempts=message.attempts,
            replayed=message.replayed,
            refusal_code=message.refusal_code,
            cost=Cost.of(message.cost) if message.HasField("cost") else None,
        )


@dataclass(frozen=True)
class Outcome:
    """A normalised call outcome as the Callback service broadcasts it."""

    call_id: str
    trace_id: str
    tool: str
    agent_id: str
    user_id: str
    status: str
    output: dict[str, Any]
    error: CallError | None
    reason: str
    duration_ms: int
    attempts: int
    event: events_pb2.CallbackEvent
    #: What the call cost, for a tool with a price; None otherwise.
    cost: Cost | None = None

    @property
    def ok(self) -> bool:
        return self.status == "SUCCESS"

    @property
    def final(self) -> bool:
        """True once the call has ended (REFUSED too: a held call that was denied); PENDING is not."""
        return is_final(self.status)

    @staticmethod
    def of(event: events_pb2.CallbackEvent) -> Outcome:
        return Outcome(
            call_id=event.call_id,
            trace_id=event.trace_id,
            tool=event.tool,
            agent_id=event.agent_id,
            user_id=event.user_id,
            status=status_name(event.status),
            output=from_struct(event.output),
            error=CallError.of(event.error) if event.HasField("error") else None,
            reason=event.reason,
            duration_ms=event.duration_ms,
            attempts=event.attempts,
            event=event,
            cost=Cost.of(event.cost) if event.HasField("cost") else None,
        )


@dataclass(frozen=True)
class ToolInfo:
    """A registered tool as an agent sees it."""

    name: str
    version: str
    description: str
    category: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    required_scopes: list[str]
    status: str
    schema_hash: str
    groups: list[str]
    raw: registry_pb2.Tool

    @staticmethod
    def of(tool: registry_pb2.Tool) -> ToolInfo:
        spec = tool.spec
        return ToolInfo(
            name=spec.name,
            version=spec.version,
            description=spec.description,
            category=spec.category,
            input_schema=from_struct(spec.input_schema),
            output_schema=from_struct(spec.output_schema),
            required_scopes=list(spec.required_scopes),
            status=registry_pb2.ToolStatus.Name(spec.status).removeprefix("TOOL_STATUS_"),
            schema_hash=tool.schema_hash,
            groups=list(tool.groups),
            raw=tool,
        )


@dataclass(frozen=True)
class ChatReply:
    """The ServiceAgent's answer to one chat message."""

    response: str
    #: The window, as given or as opened.
    chat_id: str
    #: Tasks the message filed (submit_task), in order.
    task_ids: list[str] = field(default_factory=list)

    @staticmethod
    def of(message: agent_pb2.ChatResponse) -> ChatReply:
        return ChatReply(message.response, message.chat_id, list(message.task_ids))
