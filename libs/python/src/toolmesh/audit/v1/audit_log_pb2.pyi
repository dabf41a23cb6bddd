import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from toolmesh.events.v1 import events_pb2 as _events_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AuditLogHolder(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    AUDIT_LOG_HOLDER_UNSPECIFIED: _ClassVar[AuditLogHolder]
    AUDIT_LOG_HOLDER_ARCHIVE: _ClassVar[AuditLogHolder]
    AUDIT_LOG_HOLDER_CONSUMER: _ClassVar[AuditLogHolder]
AUDIT_LOG_HOLDER_UNSPECIFIED: AuditLogHolder
AUDIT_LOG_HOLDER_ARCHIVE: AuditLogHolder
AUDIT_LOG_HOLDER_CONSUMER: AuditLogHolder

class AuditLogBlock(_message.Message):
    __slots__ = ("records",)
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[_events_pb2.AuditRecord]
    def __init__(self, records: _Optional[_Iterable[_Union[_events_pb2.AuditRecord, _Mapping]]] = ...) -> None: ...

class AuditLogHold(_message.Message):
    __slots__ = ("held", "holder", "consumer", "keep_from_seq", "since", "reason", "log_bytes", "max_bytes", "archived_seq", "updated")
    HELD_FIELD_NUMBER: _ClassVar[int]
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    KEEP_FROM_SEQ_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    LOG_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    ARCHIVED_SEQ_FIELD_NUMBER: _ClassVar[int]
    UPDATED_FIELD_NUMBER: _ClassVar[int]
    held: bool
    holder: AuditLogHolder
    consumer: str
    keep_from_seq: int
    since: _timestamp_pb2.Timestamp
    reason: str
    log_bytes: int
    max_bytes: int
    archived_seq: int
    updated: _timestamp_pb2.Timestamp
    def __init__(self, held: bool = ..., holder: _Optional[_Union[AuditLogHolder, str]] = ..., consumer: _Optional[str] = ..., keep_from_seq: _Optional[int] = ..., since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ..., log_bytes: _Optional[int] = ..., max_bytes: _Optional[int] = ..., archived_seq: _Optional[int] = ..., updated: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...
