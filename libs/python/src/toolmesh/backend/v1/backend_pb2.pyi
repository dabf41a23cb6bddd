from google.protobuf import struct_pb2 as _struct_pb2
from toolmesh.common.v1 import common_pb2 as _common_pb2
from toolmesh.events.v1 import events_pb2 as _events_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class InvokeRequest(_message.Message):
    __slots__ = ("tool", "arguments", "context", "principal", "attempt", "deadline_ms")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_MS_FIELD_NUMBER: _ClassVar[int]
    tool: str
    arguments: _struct_pb2.Struct
    context: _common_pb2.CallContext
    principal: _common_pb2.Principal
    attempt: int
    deadline_ms: int
    def __init__(self, tool: _Optional[str] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., context: _Optional[_Union[_common_pb2.CallContext, _Mapping]] = ..., principal: _Optional[_Union[_common_pb2.Principal, _Mapping]] = ..., attempt: _Optional[int] = ..., deadline_ms: _Optional[int] = ...) -> None: ...

class InvokeResult(_message.Message):
    __slots__ = ("output", "error", "pending", "cost_micros")
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    COST_MICROS_FIELD_NUMBER: _ClassVar[int]
    output: _struct_pb2.Struct
    error: _common_pb2.CallError
    pending: bool
    cost_micros: int
    def __init__(self, output: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., error: _Optional[_Union[_common_pb2.CallError, _Mapping]] = ..., pending: bool = ..., cost_micros: _Optional[int] = ...) -> None: ...

class InvokeResponse(_message.Message):
    __slots__ = ("event", "result")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    event: _events_pb2.BackendEvent
    result: InvokeResult
    def __init__(self, event: _Optional[_Union[_events_pb2.BackendEvent, _Mapping]] = ..., result: _Optional[_Union[InvokeResult, _Mapping]] = ...) -> None: ...
