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

class TraceEventKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TRACE_EVENT_KIND_UNSPECIFIED: _ClassVar[TraceEventKind]
    TRACE_EVENT_KIND_TOOL_EXECUTE: _ClassVar[TraceEventKind]
    TRACE_EVENT_KIND_TOOL_ATTEMPT: _ClassVar[TraceEventKind]
    TRACE_EVENT_KIND_TOOL_RESULT: _ClassVar[TraceEventKind]
    TRACE_EVENT_KIND_DATA_QUERY: _ClassVar[TraceEventKind]
    TRACE_EVENT_KIND_DATA_RESULT: _ClassVar[TraceEventKind]
    TRACE_EVENT_KIND_CALLBACK_SUCCESS: _ClassVar[TraceEventKind]
    TRACE_EVENT_KIND_CALLBACK_FAILURE: _ClassVar[TraceEventKind]
    TRACE_EVENT_KIND_CALLBACK_INTERRUPTED: _ClassVar[TraceEventKind]
    TRACE_EVENT_KIND_TOOL_REFUSED: _ClassVar[TraceEventKind]
    TRACE_EVENT_KIND_CUSTOM: _ClassVar[TraceEventKind]
    TRACE_EVENT_KIND_APPROVAL_REQUESTED: _ClassVar[TraceEventKind]
    TRACE_EVENT_KIND_APPROVAL_DECIDED: _ClassVar[TraceEventKind]
    TRACE_EVENT_KIND_CALLBACK_REFUSED: _ClassVar[TraceEventKind]
    TRACE_EVENT_KIND_INPUT_REQUESTED: _ClassVar[TraceEventKind]
    TRACE_EVENT_KIND_INPUT_ANSWERED: _ClassVar[TraceEventKind]
    TRACE_EVENT_KIND_CACHE_HIT: _ClassVar[TraceEventKind]

class AuditAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    AUDIT_ACTION_UNSPECIFIED: _ClassVar[AuditAction]
    AUDIT_ACTION_TOOL_CALL: _ClassVar[AuditAction]
    AUDIT_ACTION_TOOL_REFUSED: _ClassVar[AuditAction]
    AUDIT_ACTION_ADMIN: _ClassVar[AuditAction]
    AUDIT_ACTION_APPROVAL_REQUESTED: _ClassVar[AuditAction]
    AUDIT_ACTION_APPROVAL_DECIDED: _ClassVar[AuditAction]
    AUDIT_ACTION_TOOL_START: _ClassVar[AuditAction]
    AUDIT_ACTION_TOOL_REPORTED: _ClassVar[AuditAction]
    AUDIT_ACTION_CIRCUIT_OPENED: _ClassVar[AuditAction]

class CacheUse(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CACHE_USE_UNSPECIFIED: _ClassVar[CacheUse]
    CACHE_USE_MISS: _ClassVar[CacheUse]
    CACHE_USE_HIT: _ClassVar[CacheUse]

class ChangeType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CHANGE_TYPE_UNSPECIFIED: _ClassVar[ChangeType]
    CHANGE_TYPE_PUT: _ClassVar[ChangeType]
    CHANGE_TYPE_DELETE: _ClassVar[ChangeType]
TRACE_EVENT_KIND_UNSPECIFIED: TraceEventKind
TRACE_EVENT_KIND_TOOL_EXECUTE: TraceEventKind
TRACE_EVENT_KIND_TOOL_ATTEMPT: TraceEventKind
TRACE_EVENT_KIND_TOOL_RESULT: TraceEventKind
TRACE_EVENT_KIND_DATA_QUERY: TraceEventKind
TRACE_EVENT_KIND_DATA_RESULT: TraceEventKind
TRACE_EVENT_KIND_CALLBACK_SUCCESS: TraceEventKind
TRACE_EVENT_KIND_CALLBACK_FAILURE: TraceEventKind
TRACE_EVENT_KIND_CALLBACK_INTERRUPTED: TraceEventKind
TRACE_EVENT_KIND_TOOL_REFUSED: TraceEventKind
TRACE_EVENT_KIND_CUSTOM: TraceEventKind
TRACE_EVENT_KIND_APPROVAL_REQUESTED: TraceEventKind
TRACE_EVENT_KIND_APPROVAL_DECIDED: TraceEventKind
TRACE_EVENT_KIND_CALLBACK_REFUSED: TraceEventKind
TRACE_EVENT_KIND_INPUT_REQUESTED: TraceEventKind
TRACE_EVENT_KIND_INPUT_ANSWERED: TraceEventKind
TRACE_EVENT_KIND_CACHE_HIT: TraceEventKind
AUDIT_ACTION_UNSPECIFIED: AuditAction
AUDIT_ACTION_TOOL_CALL: AuditAction
AUDIT_ACTION_TOOL_REFUSED: AuditAction
AUDIT_ACTION_ADMIN: AuditAction
AUDIT_ACTION_APPROVAL_REQUESTED: AuditAction
AUDIT_ACTION_APPROVAL_DECIDED: AuditAction
AUDIT_ACTION_TOOL_START: AuditAction
AUDIT_ACTION_TOOL_REPORTED: AuditAction
AUDIT_ACTION_CIRCUIT_OPENED: AuditAction
CACHE_USE_UNSPECIFIED: CacheUse
CACHE_USE_MISS: CacheUse
CACHE_USE_HIT: CacheUse
CHANGE_TYPE_UNSPECIFIED: ChangeType
CHANGE_TYPE_PUT: ChangeType
CHANGE_TYPE_DELETE: ChangeType

class BackendEvent(_message.Message):
    __slots__ = ("kind", "custom_kind", "payload", "time")
    KIND_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_KIND_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    kind: TraceEventKind
    custom_kind: str
    payload: _struct_pb2.Struct
    time: _timestamp_pb2.Timestamp
    def __init__(self, kind: _Optional[_Union[TraceEventKind, str]] = ..., custom_kind: _Optional[str] = ..., payload: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class TraceEvent(_message.Message):
    __slots__ = ("id", "trace_id", "call_id", "parent_id", "kind", "custom_kind", "tool", "agent_id", "user_id", "time", "sequence", "payload", "source")
    ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_KIND_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    id: str
    trace_id: str
    call_id: str
    parent_id: str
    kind: TraceEventKind
    custom_kind: str
    tool: str
    agent_id: str
    user_id: str
    time: _timestamp_pb2.Timestamp
    sequence: int
    payload: _struct_pb2.Struct
    source: str
    def __init__(self, id: _Optional[str] = ..., trace_id: _Optional[str] = ..., call_id: _Optional[str] = ..., parent_id: _Optional[str] = ..., kind: _Optional[_Union[TraceEventKind, str]] = ..., custom_kind: _Optional[str] = ..., tool: _Optional[str] = ..., agent_id: _Optional[str] = ..., user_id: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., sequence: _Optional[int] = ..., payload: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., source: _Optional[str] = ...) -> None: ...

class CallLease(_message.Message):
    __slots__ = ("instance", "call_id", "trace_id", "parent_id", "tool", "agent_id", "user_id", "roles", "arguments", "started_at", "deadline")
    INSTANCE_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    instance: str
    call_id: str
    trace_id: str
    parent_id: str
    tool: str
    agent_id: str
    user_id: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    arguments: _struct_pb2.Struct
    started_at: _timestamp_pb2.Timestamp
    deadline: _timestamp_pb2.Timestamp
    def __init__(self, instance: _Optional[str] = ..., call_id: _Optional[str] = ..., trace_id: _Optional[str] = ..., parent_id: _Optional[str] = ..., tool: _Optional[str] = ..., agent_id: _Optional[str] = ..., user_id: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Cost(_message.Message):
    __slots__ = ("currency", "micros", "reported_micros")
    CURRENCY_FIELD_NUMBER: _ClassVar[int]
    MICROS_FIELD_NUMBER: _ClassVar[int]
    REPORTED_MICROS_FIELD_NUMBER: _ClassVar[int]
    currency: str
    micros: int
    reported_micros: int
    def __init__(self, currency: _Optional[str] = ..., micros: _Optional[int] = ..., reported_micros: _Optional[int] = ...) -> None: ...

class AuditRecord(_message.Message):
    __slots__ = ("id", "time", "action", "tool", "agent_id", "user_id", "roles", "call_id", "trace_id", "arguments", "status", "error_code", "error_message", "reason", "duration_ms", "attempts", "source", "sequence", "prev_hash", "hash", "decided_by", "parent_id", "output", "events", "instance", "deadline", "timeout_ms", "runtime", "started_at", "chain_version", "error_details", "cache", "cached_from", "cost", "budgets", "failed_calls", "tool_instance", "counted_by")
    ID_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    PREV_HASH_FIELD_NUMBER: _ClassVar[int]
    HASH_FIELD_NUMBER: _ClassVar[int]
    DECIDED_BY_FIELD_NUMBER: _ClassVar[int]
    PARENT_ID_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    CHAIN_VERSION_FIELD_NUMBER: _ClassVar[int]
    ERROR_DETAILS_FIELD_NUMBER: _ClassVar[int]
    CACHE_FIELD_NUMBER: _ClassVar[int]
    CACHED_FROM_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    BUDGETS_FIELD_NUMBER: _ClassVar[int]
    FAILED_CALLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_INSTANCE_FIELD_NUMBER: _ClassVar[int]
    COUNTED_BY_FIELD_NUMBER: _ClassVar[int]
    id: str
    time: _timestamp_pb2.Timestamp
    action: AuditAction
    tool: str
    agent_id: str
    user_id: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    call_id: str
    trace_id: str
    arguments: _struct_pb2.Struct
    status: _common_pb2.CallStatus
    error_code: str
    error_message: str
    reason: str
    duration_ms: int
    attempts: int
    source: str
    sequence: int
    prev_hash: str
    hash: str
    decided_by: str
    parent_id: str
    output: _struct_pb2.Struct
    events: _containers.RepeatedCompositeFieldContainer[BackendEvent]
    instance: str
    deadline: _timestamp_pb2.Timestamp
    timeout_ms: int
    runtime: str
    started_at: _timestamp_pb2.Timestamp
    chain_version: int
    error_details: _struct_pb2.Struct
    cache: CacheUse
    cached_from: str
    cost: Cost
    budgets: _containers.RepeatedScalarFieldContainer[str]
    failed_calls: _containers.RepeatedScalarFieldContainer[str]
    tool_instance: str
    counted_by: str
    def __init__(self, id: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., action: _Optional[_Union[AuditAction, str]] = ..., tool: _Optional[str] = ..., agent_id: _Optional[str] = ..., user_id: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ..., call_id: _Optional[str] = ..., trace_id: _Optional[str] = ..., arguments: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., status: _Optional[_Union[_common_pb2.CallStatus, str]] = ..., error_code: _Optional[str] = ..., error_message: _Optional[str] = ..., reason: _Optional[str] = ..., duration_ms: _Optional[int] = ..., attempts: _Optional[int] = ..., source: _Optional[str] = ..., sequence: _Optional[int] = ..., prev_hash: _Optional[str] = ..., hash: _Optional[str] = ..., decided_by: _Optional[str] = ..., parent_id: _Optional[str] = ..., output: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., events: _Optional[_Iterable[_Union[BackendEvent, _Mapping]]] = ..., instance: _Optional[str] = ..., deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., timeout_ms: _Optional[int] = ..., runtime: _Optional[str] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., chain_version: _Optional[int] = ..., error_details: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., cache: _Optional[_Union[CacheUse, str]] = ..., cached_from: _Optional[str] = ..., cost: _Optional[_Union[Cost, _Mapping]] = ..., budgets: _Optional[_Iterable[str]] = ..., failed_calls: _Optional[_Iterable[str]] = ..., tool_instance: _Optional[str] = ..., counted_by: _Optional[str] = ...) -> None: ...

class RecordBatch(_message.Message):
    __slots__ = ("records",)
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[AuditRecord]
    def __init__(self, records: _Optional[_Iterable[_Union[AuditRecord, _Mapping]]] = ...) -> None: ...

class Outcome(_message.Message):
    __slots__ = ("call_id", "trace_id", "parent_id", "tool", "agent_id", "user_id", "status", "output", "error", "reason", "duration_ms", "attempts", "started_at", "finished_at", "source")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    trace_id: str
    parent_id: str
    tool: str
    agent_id: str
    user_id: str
    status: _common_pb2.CallStatus
    output: _struct_pb2.Struct
    error: _common_pb2.CallError
    reason: str
    duration_ms: int
    attempts: int
    started_at: _timestamp_pb2.Timestamp
    finished_at: _timestamp_pb2.Timestamp
    source: str
    def __init__(self, call_id: _Optional[str] = ..., trace_id: _Optional[str] = ..., parent_id: _Optional[str] = ..., tool: _Optional[str] = ..., agent_id: _Optional[str] = ..., user_id: _Optional[str] = ..., status: _Optional[_Union[_common_pb2.CallStatus, str]] = ..., output: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., error: _Optional[_Union[_common_pb2.CallError, _Mapping]] = ..., reason: _Optional[str] = ..., duration_ms: _Optional[int] = ..., attempts: _Optional[int] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finished_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., source: _Optional[str] = ...) -> None: ...

class CallbackEvent(_message.Message):
    __slots__ = ("call_id", "trace_id", "parent_id", "tool", "agent_id", "user_id", "status", "output", "error", "reason", "duration_ms", "attempts", "time", "cost", "cached_from")
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    CACHED_FROM_FIELD_NUMBER: _ClassVar[int]
    call_id: str
    trace_id: str
    parent_id: str
    tool: str
    agent_id: str
    user_id: str
    status: _common_pb2.CallStatus
    output: _struct_pb2.Struct
    error: _common_pb2.CallError
    reason: str
    duration_ms: int
    attempts: int
    time: _timestamp_pb2.Timestamp
    cost: Cost
    cached_from: str
    def __init__(self, call_id: _Optional[str] = ..., trace_id: _Optional[str] = ..., parent_id: _Optional[str] = ..., tool: _Optional[str] = ..., agent_id: _Optional[str] = ..., user_id: _Optional[str] = ..., status: _Optional[_Union[_common_pb2.CallStatus, str]] = ..., output: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., error: _Optional[_Union[_common_pb2.CallError, _Mapping]] = ..., reason: _Optional[str] = ..., duration_ms: _Optional[int] = ..., attempts: _Optional[int] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., cost: _Optional[_Union[Cost, _Mapping]] = ..., cached_from: _Optional[str] = ...) -> None: ...

class RegistryChanged(_message.Message):
    __slots__ = ("type", "kind", "name", "revision", "changed_by", "time")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    CHANGED_BY_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    type: ChangeType
    kind: str
    name: str
    revision: int
    changed_by: str
    time: _timestamp_pb2.Timestamp
    def __init__(self, type: _Optional[_Union[ChangeType, str]] = ..., kind: _Optional[str] = ..., name: _Optional[str] = ..., revision: _Optional[int] = ..., changed_by: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class PermissionChanged(_message.Message):
    __slots__ = ("type", "kind", "id", "changed_by", "time")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    CHANGED_BY_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    type: ChangeType
    kind: str
    id: str
    changed_by: str
    time: _timestamp_pb2.Timestamp
    def __init__(self, type: _Optional[_Union[ChangeType, str]] = ..., kind: _Optional[str] = ..., id: _Optional[str] = ..., changed_by: _Optional[str] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
