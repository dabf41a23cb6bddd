import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from toolmesh.common.v1 import common_pb2 as _common_pb2
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
RUNTIME_STATE_UNSPECIFIED: RuntimeState
RUNTIME_STATE_STOPPED: RuntimeState
RUNTIME_STATE_STARTING: RuntimeState
RUNTIME_STATE_RUNNING: RuntimeState
RUNTIME_STATE_BACKOFF: RuntimeState
RUNTIME_STATE_FAILED: RuntimeState

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
    __slots__ = ("call_id", "trace_id", "status", "output", "error", "duration_ms", "attempts", "replayed", "refusal_code")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_CODE_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    trace_id: str
    status: _common_pb2.CallStatus
    output: _struct_pb2.Struct
    error: _common_pb2.CallError
    duration_ms: int
    attempts: int
    replayed: bool
    refusal_code: str
    def __init__(self, call_id: _Optional[str] = ..., trace_id: _Optional[str] = ..., status: _Optional[_Union[_common_pb2.CallStatus, str]] = ..., output: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., error: _Optional[_Union[_common_pb2.CallError, _Mapping]] = ..., duration_ms: _Optional[int] = ..., attempts: _Optional[int] = ..., replayed: bool = ..., refusal_code: _Optional[str] = ...) -> None: ...

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
    __slots__ = ("tool", "state", "pid", "port", "restarts", "last_error", "in_flight", "started_at", "last_used_at")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_USED_AT_FIELD_NUMBER: _ClassVar[int]
    tool: str
    state: RuntimeState
    pid: int
    port: int
    restarts: int
    last_error: str
    in_flight: int
    started_at: _timestamp_pb2.Timestamp
    last_used_at: _timestamp_pb2.Timestamp
    def __init__(self, tool: _Optional[str] = ..., state: _Optional[_Union[RuntimeState, str]] = ..., pid: _Optional[int] = ..., port: _Optional[int] = ..., restarts: _Optional[int] = ..., last_error: _Optional[str] = ..., in_flight: _Optional[int] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_used_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GetRuntimeStatusRequest(_message.Message):
    __slots__ = ("tool",)
    TOOL_FIELD_NUMBER: _ClassVar[int]
    tool: str
    def __init__(self, tool: _Optional[str] = ...) -> None: ...

class GetRuntimeStatusResponse(_message.Message):
    __slots__ = ("runtimes",)
    RUNTIMES_FIELD_NUMBER: _ClassVar[int]
    runtimes: _containers.RepeatedCompositeFieldContainer[RuntimeStatus]
    def __init__(self, runtimes: _Optional[_Iterable[_Union[RuntimeStatus, _Mapping]]] = ...) -> None: ...

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
