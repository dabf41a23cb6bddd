from google.protobuf import struct_pb2 as _struct_pb2
from toolmesh.common.v1 import common_pb2 as _common_pb2
from toolmesh.events.v1 import events_pb2 as _events_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ReportRequest(_message.Message):
    __slots__ = ("call_id", "status", "output", "error", "reason")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    status: _common_pb2.CallStatus
    output: _struct_pb2.Struct
    error: _common_pb2.CallError
    reason: str
    def __init__(self, call_id: _Optional[str] = ..., status: _Optional[_Union[_common_pb2.CallStatus, str]] = ..., output: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., error: _Optional[_Union[_common_pb2.CallError, _Mapping]] = ..., reason: _Optional[str] = ...) -> None: ...

class ReportResponse(_message.Message):
    __slots__ = ("event", "duplicate")
    EVENT_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    event: _events_pb2.CallbackEvent
    duplicate: bool
    def __init__(self, event: _Optional[_Union[_events_pb2.CallbackEvent, _Mapping]] = ..., duplicate: bool = ...) -> None: ...

class GetOutcomeRequest(_message.Message):
    __slots__ = ("call_id",)
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    def __init__(self, call_id: _Optional[str] = ...) -> None: ...

class GetOutcomeResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: _events_pb2.CallbackEvent
    def __init__(self, event: _Optional[_Union[_events_pb2.CallbackEvent, _Mapping]] = ...) -> None: ...

class WatchRequest(_message.Message):
    __slots__ = ("call_id", "agent_id", "tool", "status")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    agent_id: str
    tool: str
    status: _common_pb2.CallStatus
    def __init__(self, call_id: _Optional[str] = ..., agent_id: _Optional[str] = ..., tool: _Optional[str] = ..., status: _Optional[_Union[_common_pb2.CallStatus, str]] = ...) -> None: ...

class WatchResponse(_message.Message):
    __slots__ = ("event",)
    EVENT_FIELD_NUMBER: _ClassVar[int]
    event: _events_pb2.CallbackEvent
    def __init__(self, event: _Optional[_Union[_events_pb2.CallbackEvent, _Mapping]] = ...) -> None: ...
