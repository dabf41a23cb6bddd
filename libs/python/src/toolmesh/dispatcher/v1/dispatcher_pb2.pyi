import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from toolmesh.common.v1 import common_pb2 as _common_pb2
from toolmesh.events.v1 import events_pb2 as _events_pb2
from toolmesh.registry.v1 import registry_pb2 as _registry_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RuntimeState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RUNTIME_STATE_UNSPECIFIED: _ClassVar[RuntimeState]
    RUNTIME_STATE_STOPPED: _ClassVar[RuntimeState]
    RUNTIME_STATE_STARTING: _ClassVar[RuntimeState]
    RUNTIME_STATE_RUNNING: _ClassVar[RuntimeState]
    RUNTIME_STATE_BACKOFF: _ClassVar[RuntimeState]
    RUNTIME_STATE_FAILED: _ClassVar[RuntimeState]

class CircuitState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CIRCUIT_STATE_UNSPECIFIED: _ClassVar[CircuitState]
    CIRCUIT_STATE_CLOSED: _ClassVar[CircuitState]
    CIRCUIT_STATE_OPEN: _ClassVar[CircuitState]
    CIRCUIT_STATE_HALF_OPEN: _ClassVar[CircuitState]

class ToolCallDialect(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TOOL_CALL_DIALECT_UNSPECIFIED: _ClassVar[ToolCallDialect]
    TOOL_CALL_DIALECT_OPENAI_CHAT: _ClassVar[ToolCallDialect]
    TOOL_CALL_DIALECT_OPENAI_RESPONSES: _ClassVar[ToolCallDialect]
    TOOL_CALL_DIALECT_ANTHROPIC: _ClassVar[ToolCallDialect]

class McpImportChange(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MCP_IMPORT_CHANGE_UNSPECIFIED: _ClassVar[McpImportChange]
    MCP_IMPORT_CHANGE_ADDED: _ClassVar[McpImportChange]
    MCP_IMPORT_CHANGE_CHANGED: _ClassVar[McpImportChange]
    MCP_IMPORT_CHANGE_UNCHANGED: _ClassVar[McpImportChange]
    MCP_IMPORT_CHANGE_REMOVED: _ClassVar[McpImportChange]

class ApprovalState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPROVAL_STATE_UNSPECIFIED: _ClassVar[ApprovalState]
    APPROVAL_STATE_PENDING: _ClassVar[ApprovalState]
    APPROVAL_STATE_APPROVED: _ClassVar[ApprovalState]
    APPROVAL_STATE_DENIED: _ClassVar[ApprovalState]
    APPROVAL_STATE_EXPIRED: _ClassVar[ApprovalState]

class ApprovalDecision(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    APPROVAL_DECISION_UNSPECIFIED: _ClassVar[ApprovalDecision]
    APPROVAL_DECISION_APPROVE: _ClassVar[ApprovalDecision]
    APPROVAL_DECISION_DENY: _ClassVar[ApprovalDecision]
RUNTIME_STATE_UNSPECIFIED: RuntimeState
RUNTIME_STATE_STOPPED: RuntimeState
RUNTIME_STATE_STARTING: RuntimeState
RUNTIME_STATE_RUNNING: RuntimeState
RUNTIME_STATE_BACKOFF: RuntimeState
RUNTIME_STATE_FAILED: RuntimeState
CIRCUIT_STATE_UNSPECIFIED: CircuitState
CIRCUIT_STATE_CLOSED: CircuitState
CIRCUIT_STATE_OPEN: CircuitState
CIRCUIT_STATE_HALF_OPEN: CircuitState
TOOL_CALL_DIALECT_UNSPECIFIED: ToolCallDialect
TOOL_CALL_DIALECT_OPENAI_CHAT: ToolCallDialect
TOOL_CALL_DIALECT_OPENAI_RESPONSES: ToolCallDialect
TOOL_CALL_DIALECT_ANTHROPIC: ToolCallDialect
MCP_IMPORT_CHANGE_UNSPECIFIED: McpImportChange
MCP_IMPORT_CHANGE_ADDED: McpImportChange
MCP_IMPORT_CHANGE_CHANGED: McpImportChange
MCP_IMPORT_CHANGE_UNCHANGED: McpImportChange
MCP_IMPORT_CHANGE_REMOVED: McpImportChange
APPROVAL_STATE_UNSPECIFIED: ApprovalState
APPROVAL_STATE_PENDING: ApprovalState
APPROVAL_STATE_APPROVED: ApprovalState
APPROVAL_STATE_DENIED: ApprovalState
APPROVAL_STATE_EXPIRED: ApprovalState
APPROVAL_DECISION_UNSPECIFIED: ApprovalDecision
APPROVAL_DECISION_APPROVE: ApprovalDecision
APPROVAL_DECISION_DENY: ApprovalDecision

class DispatchRequest(_message.Message):
    __slots__ = ("tool", "arguments", "context", "timeout_ms")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    tool: str
    arguments: _struct_pb2.Struct
    context: _common_pb2.CallContext
    timeout_ms: int
    def __init__(self, tool: _Optional[str] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., context: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class DispatchResponse(_message.Message):
    __slots__ = ("call_id", "trace_id", "status", "output", "error", "duration_ms", "attempts", "replayed", "refusal_code", "approval_expires_at", "input_required", "cached_from", "cost")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_CODE_FIELD_NUMBER: _ClassVar[int]
    APPROVAL_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    INPUT_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    CACHED_FROM_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    trace_id: str
    status: _common_pb2.CallStatus
    output: _struct_pb2.Struct
    error: _common_pb2.CallError
    duration_ms: int
    attempts: int
    replayed: bool
    refusal_code: str
    approval_expires_at: _timestamp_pb2.Timestamp
    input_required: InputRequired
    cached_from: str
    cost: _events_pb2.Cost
    def __init__(self, call_id: _Optional[str] = ..., trace_id: _Optional[str] = ..., status: _Optional[_Union[_common_pb2.CallStatus, str]] = ..., output: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., error: _Optional[_Union[_common_pb2.CallError, _Mapping]] = ..., duration_ms: _Optional[int] = ..., attempts: _Optional[int] = ..., replayed: bool = ..., refusal_code: _Optional[str] = ..., approval_expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., input_required: _Optional[_Union[InputRequired, _Mapping]] = ..., cached_from: _Optional[str] = ..., cost: _Optional[_Union[_events_pb2.Cost, _Mapping]] = ...) -> None: ...

class InputRequired(_message.Message):
    __slots__ = ("requests", "request_state", "expires_at")
    class RequestsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: InputRequest
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[InputRequest, _Mapping]] = ...) -> None: ...
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_STATE_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    requests: _containers.MessageMap[str, InputRequest]
    request_state: str
    expires_at: _timestamp_pb2.Timestamp
    def __init__(self, requests: _Optional[_Mapping[str, InputRequest]] = ..., request_state: _Optional[str] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class InputRequest(_message.Message):
    __slots__ = ("method", "params")
    METHOD_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    method: str
    params: _struct_pb2.Struct
    def __init__(self, method: _Optional[str] = ..., params: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class AnswerInputRequest(_message.Message):
    __slots__ = ("request_state", "responses", "timeout_ms")
    class ResponsesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _struct_pb2.Struct
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...
    REQUEST_STATE_FIELD_NUMBER: _ClassVar[int]
    RESPONSES_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    request_state: str
    responses: _containers.MessageMap[str, _struct_pb2.Struct]
    timeout_ms: int
    def __init__(self, request_state: _Optional[str] = ..., responses: _Optional[_Mapping[str, _struct_pb2.Struct]] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class AnswerInputResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: DispatchResponse
    def __init__(self, result: _Optional[_Union[DispatchResponse, _Mapping]] = ...) -> None: ...

class SearchToolsRequest(_message.Message):
    __slots__ = ("query", "limit")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    query: str
    limit: int
    def __init__(self, query: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class FoundTool(_message.Message):
    __slots__ = ("tool", "score")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    tool: _registry_pb2.Tool
    score: float
    def __init__(self, tool: _Optional[_Union[_registry_pb2.Tool, _Mapping]] = ..., score: _Optional[float] = ...) -> None: ...

class SearchToolsResponse(_message.Message):
    __slots__ = ("tools",)
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[FoundTool]
    def __init__(self, tools: _Optional[_Iterable[_Union[FoundTool, _Mapping]]] = ...) -> None: ...

class DispatchBatchRequest(_message.Message):
    __slots__ = ("calls", "trace_id")
    CALLS_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    calls: _containers.RepeatedCompositeFieldContainer[DispatchRequest]
    trace_id: str
    def __init__(self, calls: _Optional[_Iterable[_Union[DispatchRequest, _Mapping]]] = ..., trace_id: _Optional[str] = ...) -> None: ...

class DispatchBatchResponse(_message.Message):
    __slots__ = ("results", "trace_id")
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[DispatchResponse]
    trace_id: str
    def __init__(self, results: _Optional[_Iterable[_Union[DispatchResponse, _Mapping]]] = ..., trace_id: _Optional[str] = ...) -> None: ...

class CancelRequest(_message.Message):
    __slots__ = ("call_id", "reason")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    reason: str
    def __init__(self, call_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class CancelResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RuntimeStatus(_message.Message):
    __slots__ = ("tool", "state", "pid", "port", "restarts", "last_error", "in_flight", "started_at", "last_used_at", "container_id", "instances", "min_instances", "max_instances", "starts_saved", "kind")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_USED_AT_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    INSTANCES_FIELD_NUMBER: _ClassVar[int]
    MIN_INSTANCES_FIELD_NUMBER: _ClassVar[int]
    MAX_INSTANCES_FIELD_NUMBER: _ClassVar[int]
    STARTS_SAVED_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    tool: str
    state: RuntimeState
    pid: int
    port: int
    restarts: int
    last_error: str
    in_flight: int
    started_at: _timestamp_pb2.Timestamp
    last_used_at: _timestamp_pb2.Timestamp
    container_id: str
    instances: _containers.RepeatedCompositeFieldContainer[RuntimeInstance]
    min_instances: int
    max_instances: int
    starts_saved: int
    kind: str
    def __init__(self, tool: _Optional[str] = ..., state: _Optional[_Union[RuntimeState, str]] = ..., pid: _Optional[int] = ..., port: _Optional[int] = ..., restarts: _Optional[int] = ..., last_error: _Optional[str] = ..., in_flight: _Optional[int] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_used_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., container_id: _Optional[str] = ..., instances: _Optional[_Iterable[_Union[RuntimeInstance, _Mapping]]] = ..., min_instances: _Optional[int] = ..., max_instances: _Optional[int] = ..., starts_saved: _Optional[int] = ..., kind: _Optional[str] = ...) -> None: ...

class RuntimeInstance(_message.Message):
    __slots__ = ("id", "state", "pid", "port", "container_id", "restarts", "last_error", "in_flight", "calls", "started_at", "last_used_at", "started_for", "health_failures", "breaker")
    ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_ID_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_USED_AT_FIELD_NUMBER: _ClassVar[int]
    STARTED_FOR_FIELD_NUMBER: _ClassVar[int]
    HEALTH_FAILURES_FIELD_NUMBER: _ClassVar[int]
    BREAKER_FIELD_NUMBER: _ClassVar[int]
    id: int
    state: RuntimeState
    pid: int
    port: int
    container_id: str
    restarts: int
    last_error: str
    in_flight: int
    calls: int
    started_at: _timestamp_pb2.Timestamp
    last_used_at: _timestamp_pb2.Timestamp
    started_for: str
    health_failures: int
    breaker: CircuitStatus
    def __init__(self, id: _Optional[int] = ..., state: _Optional[_Union[RuntimeState, str]] = ..., pid: _Optional[int] = ..., port: _Optional[int] = ..., container_id: _Optional[str] = ..., restarts: _Optional[int] = ..., last_error: _Optional[str] = ..., in_flight: _Optional[int] = ..., calls: _Optional[int] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_used_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., started_for: _Optional[str] = ..., health_failures: _Optional[int] = ..., breaker: _Optional[_Union[CircuitStatus, _Mapping]] = ...) -> None: ...

class CircuitStatus(_message.Message):
    __slots__ = ("state", "consecutive_failures", "opens", "opened_at", "retry_at", "last_error", "failed_calls")
    STATE_FIELD_NUMBER: _ClassVar[int]
    CONSECUTIVE_FAILURES_FIELD_NUMBER: _ClassVar[int]
    OPENS_FIELD_NUMBER: _ClassVar[int]
    OPENED_AT_FIELD_NUMBER: _ClassVar[int]
    RETRY_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    FAILED_CALLS_FIELD_NUMBER: _ClassVar[int]
    state: CircuitState
    consecutive_failures: int
    opens: int
    opened_at: _timestamp_pb2.Timestamp
    retry_at: _timestamp_pb2.Timestamp
    last_error: str
    failed_calls: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, state: _Optional[_Union[CircuitState, str]] = ..., consecutive_failures: _Optional[int] = ..., opens: _Optional[int] = ..., opened_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., retry_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_error: _Optional[str] = ..., failed_calls: _Optional[_Iterable[str]] = ...) -> None: ...

class ToolCircuit(_message.Message):
    __slots__ = ("tool", "breaker")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    BREAKER_FIELD_NUMBER: _ClassVar[int]
    tool: str
    breaker: CircuitStatus
    def __init__(self, tool: _Optional[str] = ..., breaker: _Optional[_Union[CircuitStatus, _Mapping]] = ...) -> None: ...

class GetRuntimeStatusRequest(_message.Message):
    __slots__ = ("tool",)
    TOOL_FIELD_NUMBER: _ClassVar[int]
    tool: str
    def __init__(self, tool: _Optional[str] = ...) -> None: ...

class GetRuntimeStatusResponse(_message.Message):
    __slots__ = ("runtimes", "breakers")
    RUNTIMES_FIELD_NUMBER: _ClassVar[int]
    BREAKERS_FIELD_NUMBER: _ClassVar[int]
    runtimes: _containers.RepeatedCompositeFieldContainer[RuntimeStatus]
    breakers: _containers.RepeatedCompositeFieldContainer[ToolCircuit]
    def __init__(self, runtimes: _Optional[_Iterable[_Union[RuntimeStatus, _Mapping]]] = ..., breakers: _Optional[_Iterable[_Union[ToolCircuit, _Mapping]]] = ...) -> None: ...

class StartToolRequest(_message.Message):
    __slots__ = ("tool",)
    TOOL_FIELD_NUMBER: _ClassVar[int]
    tool: str
    def __init__(self, tool: _Optional[str] = ...) -> None: ...

class StartToolResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: RuntimeStatus
    def __init__(self, status: _Optional[_Union[RuntimeStatus, _Mapping]] = ...) -> None: ...

class StopToolRequest(_message.Message):
    __slots__ = ("tool",)
    TOOL_FIELD_NUMBER: _ClassVar[int]
    tool: str
    def __init__(self, tool: _Optional[str] = ...) -> None: ...

class StopToolResponse(_message.Message):
    __slots__ = ("status",)
    STATUS_FIELD_NUMBER: _ClassVar[int]
    status: RuntimeStatus
    def __init__(self, status: _Optional[_Union[RuntimeStatus, _Mapping]] = ...) -> None: ...

class DispatchToolCallsRequest(_message.Message):
    __slots__ = ("message", "dialect", "trace_id", "timeout_ms")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DIALECT_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    message: _struct_pb2.Struct
    dialect: ToolCallDialect
    trace_id: str
    timeout_ms: int
    def __init__(self, message: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., dialect: _Optional[_Union[ToolCallDialect, str]] = ..., trace_id: _Optional[str] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class DispatchToolCallsResponse(_message.Message):
    __slots__ = ("dialect", "messages", "results", "trace_id")
    DIALECT_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    dialect: ToolCallDialect
    messages: _containers.RepeatedCompositeFieldContainer[_struct_pb2.Struct]
    results: _containers.RepeatedCompositeFieldContainer[DispatchResponse]
    trace_id: str
    def __init__(self, dialect: _Optional[_Union[ToolCallDialect, str]] = ..., messages: _Optional[_Iterable[_Union[_struct_pb2.Struct, _Mapping]]] = ..., results: _Optional[_Iterable[_Union[DispatchResponse, _Mapping]]] = ..., trace_id: _Optional[str] = ...) -> None: ...

class ImportMcpServerRequest(_message.Message):
    __slots__ = ("prefix", "runtime", "required_scopes", "dry_run", "only")
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_SCOPES_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    ONLY_FIELD_NUMBER: _ClassVar[int]
    prefix: str
    runtime: _registry_pb2.McpRuntime
    required_scopes: _containers.RepeatedScalarFieldContainer[str]
    dry_run: bool
    only: _containers.RepeatedScalarFieldContainer[_registry_pb2.McpOperation]
    def __init__(self, prefix: _Optional[str] = ..., runtime: _Optional[_Union[_registry_pb2.McpRuntime, _Mapping]] = ..., required_scopes: _Optional[_Iterable[str]] = ..., dry_run: bool = ..., only: _Optional[_Iterable[_Union[_registry_pb2.McpOperation, str]]] = ...) -> None: ...

class ImportedMcpTool(_message.Message):
    __slots__ = ("tool", "mcp_name", "change", "operation")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    MCP_NAME_FIELD_NUMBER: _ClassVar[int]
    CHANGE_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    tool: str
    mcp_name: str
    change: McpImportChange
    operation: _registry_pb2.McpOperation
    def __init__(self, tool: _Optional[str] = ..., mcp_name: _Optional[str] = ..., change: _Optional[_Union[McpImportChange, str]] = ..., operation: _Optional[_Union[_registry_pb2.McpOperation, str]] = ...) -> None: ...

class ImportMcpServerResponse(_message.Message):
    __slots__ = ("tools", "server_name", "server_version")
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    SERVER_NAME_FIELD_NUMBER: _ClassVar[int]
    SERVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[ImportedMcpTool]
    server_name: str
    server_version: str
    def __init__(self, tools: _Optional[_Iterable[_Union[ImportedMcpTool, _Mapping]]] = ..., server_name: _Optional[str] = ..., server_version: _Optional[str] = ...) -> None: ...

class Approval(_message.Message):
    __slots__ = ("call_id", "trace_id", "tool", "agent_id", "user_id", "arguments", "requested_at", "expires_at", "state", "decided_by", "decided_at", "reason", "approver_roles", "required_by", "confirmation_by", "confirmed_at")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    DECIDED_BY_FIELD_NUMBER: _ClassVar[int]
    DECIDED_AT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    APPROVER_ROLES_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_BY_FIELD_NUMBER: _ClassVar[int]
    CONFIRMATION_BY_FIELD_NUMBER: _ClassVar[int]
    CONFIRMED_AT_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    trace_id: str
    tool: str
    agent_id: str
    user_id: str
    arguments: _struct_pb2.Struct
    requested_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    state: ApprovalState
    decided_by: str
    decided_at: _timestamp_pb2.Timestamp
    reason: str
    approver_roles: _containers.RepeatedScalarFieldContainer[str]
    required_by: _containers.RepeatedScalarFieldContainer[str]
    confirmation_by: _containers.RepeatedScalarFieldContainer[str]
    confirmed_at: _timestamp_pb2.Timestamp
    def __init__(self, call_id: _Optional[str] = ..., trace_id: _Optional[str] = ..., tool: _Optional[str] = ..., agent_id: _Optional[str] = ..., user_id: _Optional[str] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., requested_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., state: _Optional[_Union[ApprovalState, str]] = ..., decided_by: _Optional[str] = ..., decided_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ..., approver_roles: _Optional[_Iterable[str]] = ..., required_by: _Optional[_Iterable[str]] = ..., confirmation_by: _Optional[_Iterable[str]] = ..., confirmed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class HeldCall(_message.Message):
    __slots__ = ("approval", "arguments", "parent_id", "roles", "key_id", "timeout_ms", "definition_hash", "idempotency_key", "confirmation_nonce")
    APPROVAL_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    PARENT_ID_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    DEFINITION_HASH_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    CONFIRMATION_NONCE_FIELD_NUMBER: _ClassVar[int]
    approval: Approval
    arguments: _struct_pb2.Struct
    parent_id: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    key_id: str
    timeout_ms: int
    definition_hash: str
    idempotency_key: str
    confirmation_nonce: str
    def __init__(self, approval: _Optional[_Union[Approval, _Mapping]] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., parent_id: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ..., key_id: _Optional[str] = ..., timeout_ms: _Optional[int] = ..., definition_hash: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., confirmation_nonce: _Optional[str] = ...) -> None: ...

class ListApprovalsRequest(_message.Message):
    __slots__ = ("tool", "agent_id", "page_size", "page_token")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    tool: str
    agent_id: str
    page_size: int
    page_token: str
    def __init__(self, tool: _Optional[str] = ..., agent_id: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListApprovalsResponse(_message.Message):
    __slots__ = ("approvals", "next_page_token")
    APPROVALS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    approvals: _containers.RepeatedCompositeFieldContainer[Approval]
    next_page_token: str
    def __init__(self, approvals: _Optional[_Iterable[_Union[Approval, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class DecideApprovalRequest(_message.Message):
    __slots__ = ("call_id", "decision", "reason")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    DECISION_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    decision: ApprovalDecision
    reason: str
    def __init__(self, call_id: _Optional[str] = ..., decision: _Optional[_Union[ApprovalDecision, str]] = ..., reason: _Optional[str] = ...) -> None: ...

class DecideApprovalResponse(_message.Message):
    __slots__ = ("approval", "result")
    APPROVAL_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    approval: Approval
    result: DispatchResponse
    def __init__(self, approval: _Optional[_Union[Approval, _Mapping]] = ..., result: _Optional[_Union[DispatchResponse, _Mapping]] = ...) -> None: ...
