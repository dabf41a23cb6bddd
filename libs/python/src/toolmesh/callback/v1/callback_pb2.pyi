import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from toolmesh.common.v1 import common_pb2 as _common_pb2
from toolmesh.events.v1 import events_pb2 as _events_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
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

class GetUsageRequest(_message.Message):
    __slots__ = ("agent_id", "user_id", "tool", "start_hour", "end_hour", "page_size", "page_token")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    START_HOUR_FIELD_NUMBER: _ClassVar[int]
    END_HOUR_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    user_id: str
    tool: str
    start_hour: _timestamp_pb2.Timestamp
    end_hour: _timestamp_pb2.Timestamp
    page_size: int
    page_token: str
    def __init__(self, agent_id: _Optional[str] = ..., user_id: _Optional[str] = ..., tool: _Optional[str] = ..., start_hour: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end_hour: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class GetUsageResponse(_message.Message):
    __slots__ = ("usage", "next_page_token")
    USAGE_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    usage: _containers.RepeatedCompositeFieldContainer[Usage]
    next_page_token: str
    def __init__(self, usage: _Optional[_Iterable[_Union[Usage, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class Usage(_message.Message):
    __slots__ = ("hour", "agent_id", "user_id", "tool", "calls", "errors", "failures", "interrupted", "refused", "duration_ms", "cache_hits", "cache_misses", "cost_micros")
    class CostMicrosEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    HOUR_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    CALLS_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    INTERRUPTED_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    CACHE_HITS_FIELD_NUMBER: _ClassVar[int]
    CACHE_MISSES_FIELD_NUMBER: _ClassVar[int]
    COST_MICROS_FIELD_NUMBER: _ClassVar[int]
    hour: _timestamp_pb2.Timestamp
    agent_id: str
    user_id: str
    tool: str
    calls: int
    errors: int
    failures: int
    interrupted: int
    refused: int
    duration_ms: int
    cache_hits: int
    cache_misses: int
    cost_micros: _containers.ScalarMap[str, int]
    def __init__(self, hour: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., agent_id: _Optional[str] = ..., user_id: _Optional[str] = ..., tool: _Optional[str] = ..., calls: _Optional[int] = ..., errors: _Optional[int] = ..., failures: _Optional[int] = ..., interrupted: _Optional[int] = ..., refused: _Optional[int] = ..., duration_ms: _Optional[int] = ..., cache_hits: _Optional[int] = ..., cache_misses: _Optional[int] = ..., cost_micros: _Optional[_Mapping[str, int]] = ...) -> None: ...

class StoredSpend(_message.Message):
    __slots__ = ("budget_id", "period", "currency", "spent_micros", "by_instance", "counted_blocks")
    class ByInstanceEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    BUDGET_ID_FIELD_NUMBER: _ClassVar[int]
    PERIOD_FIELD_NUMBER: _ClassVar[int]
    CURRENCY_FIELD_NUMBER: _ClassVar[int]
    SPENT_MICROS_FIELD_NUMBER: _ClassVar[int]
    BY_INSTANCE_FIELD_NUMBER: _ClassVar[int]
    COUNTED_BLOCKS_FIELD_NUMBER: _ClassVar[int]
    budget_id: str
    period: str
    currency: str
    spent_micros: int
    by_instance: _containers.ScalarMap[str, int]
    counted_blocks: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, budget_id: _Optional[str] = ..., period: _Optional[str] = ..., currency: _Optional[str] = ..., spent_micros: _Optional[int] = ..., by_instance: _Optional[_Mapping[str, int]] = ..., counted_blocks: _Optional[_Iterable[int]] = ...) -> None: ...

class StoredUsage(_message.Message):
    __slots__ = ("usage", "applied_sequence", "counted_blocks")
    USAGE_FIELD_NUMBER: _ClassVar[int]
    APPLIED_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    COUNTED_BLOCKS_FIELD_NUMBER: _ClassVar[int]
    usage: Usage
    applied_sequence: int
    counted_blocks: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, usage: _Optional[_Union[Usage, _Mapping]] = ..., applied_sequence: _Optional[int] = ..., counted_blocks: _Optional[_Iterable[int]] = ...) -> None: ...
