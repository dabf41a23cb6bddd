import datetime

from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CallStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CALL_STATUS_UNSPECIFIED: _ClassVar[CallStatus]
    CALL_STATUS_SUCCESS: _ClassVar[CallStatus]
    CALL_STATUS_FAILURE: _ClassVar[CallStatus]
    CALL_STATUS_INTERRUPTED: _ClassVar[CallStatus]
    CALL_STATUS_PENDING: _ClassVar[CallStatus]
    CALL_STATUS_REFUSED: _ClassVar[CallStatus]
CALL_STATUS_UNSPECIFIED: CallStatus
CALL_STATUS_SUCCESS: CallStatus
CALL_STATUS_FAILURE: CallStatus
CALL_STATUS_INTERRUPTED: CallStatus
CALL_STATUS_PENDING: CallStatus
CALL_STATUS_REFUSED: CallStatus

class Principal(_message.Message):
    __slots__ = ("agent_id", "user_id", "roles", "key_id")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    user_id: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    key_id: str
    def __init__(self, agent_id: _Optional[str] = ..., user_id: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ..., key_id: _Optional[str] = ...) -> None: ...

class CallContext(_message.Message):
    __slots__ = ("trace_id", "parent_id", "call_id", "idempotency_key", "tool_pin")
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    TOOL_PIN_FIELD_NUMBER: _ClassVar[int]
    trace_id: str
    parent_id: str
    call_id: str
    idempotency_key: str
    tool_pin: str
    def __init__(self, trace_id: _Optional[str] = ..., parent_id: _Optional[str] = ..., call_id: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., tool_pin: _Optional[str] = ...) -> None: ...

class CallError(_message.Message):
    __slots__ = ("code", "message", "details")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DETAILS_FIELD_NUMBER: _ClassVar[int]
    code: str
    message: str
    details: _struct_pb2.Struct
    def __init__(self, code: _Optional[str] = ..., message: _Optional[str] = ..., details: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class FieldViolation(_message.Message):
    __slots__ = ("path", "message", "keyword", "params", "schema_path")
    PATH_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    KEYWORD_FIELD_NUMBER: _ClassVar[int]
    PARAMS_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_PATH_FIELD_NUMBER: _ClassVar[int]
    path: str
    message: str
    keyword: str
    params: _struct_pb2.Struct
    schema_path: str
    def __init__(self, path: _Optional[str] = ..., message: _Optional[str] = ..., keyword: _Optional[str] = ..., params: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., schema_path: _Optional[str] = ...) -> None: ...

class ValidationFailure(_message.Message):
    __slots__ = ("subject", "violations")
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    subject: str
    violations: _containers.RepeatedCompositeFieldContainer[FieldViolation]
    def __init__(self, subject: _Optional[str] = ..., violations: _Optional[_Iterable[_Union[FieldViolation, _Mapping]]] = ...) -> None: ...

class ToolNotFound(_message.Message):
    __slots__ = ("requested", "available_tools")
    REQUESTED_FIELD_NUMBER: _ClassVar[int]
    AVAILABLE_TOOLS_FIELD_NUMBER: _ClassVar[int]
    requested: str
    available_tools: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, requested: _Optional[str] = ..., available_tools: _Optional[_Iterable[str]] = ...) -> None: ...

class PermissionDenial(_message.Message):
    __slots__ = ("resource", "missing_scopes", "deny_grant_id", "principal", "reason")
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    MISSING_SCOPES_FIELD_NUMBER: _ClassVar[int]
    DENY_GRANT_ID_FIELD_NUMBER: _ClassVar[int]
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    resource: str
    missing_scopes: _containers.RepeatedScalarFieldContainer[str]
    deny_grant_id: str
    principal: str
    reason: str
    def __init__(self, resource: _Optional[str] = ..., missing_scopes: _Optional[_Iterable[str]] = ..., deny_grant_id: _Optional[str] = ..., principal: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class BadField(_message.Message):
    __slots__ = ("field", "description")
    FIELD_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    field: str
    description: str
    def __init__(self, field: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class BudgetExceeded(_message.Message):
    __slots__ = ("budget_id", "currency", "limit_micros", "remaining_micros", "call_micros", "resets_at")
    BUDGET_ID_FIELD_NUMBER: _ClassVar[int]
    CURRENCY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_MICROS_FIELD_NUMBER: _ClassVar[int]
    REMAINING_MICROS_FIELD_NUMBER: _ClassVar[int]
    CALL_MICROS_FIELD_NUMBER: _ClassVar[int]
    RESETS_AT_FIELD_NUMBER: _ClassVar[int]
    budget_id: str
    currency: str
    limit_micros: int
    remaining_micros: int
    call_micros: int
    resets_at: _timestamp_pb2.Timestamp
    def __init__(self, budget_id: _Optional[str] = ..., currency: _Optional[str] = ..., limit_micros: _Optional[int] = ..., remaining_micros: _Optional[int] = ..., call_micros: _Optional[int] = ..., resets_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CircuitOpen(_message.Message):
    __slots__ = ("tool", "retry_at", "failures", "last_error")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    RETRY_AT_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    tool: str
    retry_at: _timestamp_pb2.Timestamp
    failures: int
    last_error: str
    def __init__(self, tool: _Optional[str] = ..., retry_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., failures: _Optional[int] = ..., last_error: _Optional[str] = ...) -> None: ...
