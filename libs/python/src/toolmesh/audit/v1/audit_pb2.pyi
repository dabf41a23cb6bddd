import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from toolmesh.common.v1 import common_pb2 as _common_pb2
from toolmesh.events.v1 import events_pb2 as _events_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class QueryRecordsRequest(_message.Message):
    __slots__ = ("agent_id", "user_id", "tool", "status", "trace_id", "call_id", "start_time", "end_time", "page_size", "page_token")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    user_id: str
    tool: str
    status: _common_pb2.CallStatus
    trace_id: str
    call_id: str
    start_time: _timestamp_pb2.Timestamp
    end_time: _timestamp_pb2.Timestamp
    page_size: int
    page_token: str
    def __init__(self, agent_id: _Optional[str] = ..., user_id: _Optional[str] = ..., tool: _Optional[str] = ..., status: _Optional[_Union[_common_pb2.CallStatus, str]] = ..., trace_id: _Optional[str] = ..., call_id: _Optional[str] = ..., start_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class QueryRecordsResponse(_message.Message):
    __slots__ = ("records", "next_page_token")
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[_events_pb2.AuditRecord]
    next_page_token: str
    def __init__(self, records: _Optional[_Iterable[_Union[_events_pb2.AuditRecord, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetTraceRequest(_message.Message):
    __slots__ = ("trace_id",)
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    trace_id: str
    def __init__(self, trace_id: _Optional[str] = ...) -> None: ...

class GetTraceResponse(_message.Message):
    __slots__ = ("trace_id", "events")
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    trace_id: str
    events: _containers.RepeatedCompositeFieldContainer[_events_pb2.TraceEvent]
    def __init__(self, trace_id: _Optional[str] = ..., events: _Optional[_Iterable[_Union[_events_pb2.TraceEvent, _Mapping]]] = ...) -> None: ...

class VerifyChainRequest(_message.Message):
    __slots__ = ("from_sequence",)
    FROM_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    from_sequence: int
    def __init__(self, from_sequence: _Optional[int] = ...) -> None: ...

class VerifyChainResponse(_message.Message):
    __slots__ = ("ok", "records_checked", "first_break_sequence", "expected_hash", "actual_hash", "reason")
    OK_FIELD_NUMBER: _ClassVar[int]
    RECORDS_CHECKED_FIELD_NUMBER: _ClassVar[int]
    FIRST_BREAK_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_HASH_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_HASH_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    records_checked: int
    first_break_sequence: int
    expected_hash: str
    actual_hash: str
    reason: str
    def __init__(self, ok: bool = ..., records_checked: _Optional[int] = ..., first_break_sequence: _Optional[int] = ..., expected_hash: _Optional[str] = ..., actual_hash: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class GetCallRequest(_message.Message):
    __slots__ = ("call_id", "wait")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    wait: bool
    def __init__(self, call_id: _Optional[str] = ..., wait: bool = ...) -> None: ...

class GetCallResponse(_message.Message):
    __slots__ = ("records",)
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[_events_pb2.AuditRecord]
    def __init__(self, records: _Optional[_Iterable[_Union[_events_pb2.AuditRecord, _Mapping]]] = ...) -> None: ...
