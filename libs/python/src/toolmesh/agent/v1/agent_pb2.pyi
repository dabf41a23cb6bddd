import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from toolmesh.common.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class BuildRuntime(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BUILD_RUNTIME_UNSPECIFIED: _ClassVar[BuildRuntime]
    BUILD_RUNTIME_DOCKER: _ClassVar[BuildRuntime]
    BUILD_RUNTIME_UV: _ClassVar[BuildRuntime]

class TaskStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_STATUS_UNSPECIFIED: _ClassVar[TaskStatus]
    TASK_STATUS_PENDING: _ClassVar[TaskStatus]
    TASK_STATUS_RUNNING: _ClassVar[TaskStatus]
    TASK_STATUS_SUCCEEDED: _ClassVar[TaskStatus]
    TASK_STATUS_FAILED: _ClassVar[TaskStatus]

class TaskLogKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_LOG_KIND_UNSPECIFIED: _ClassVar[TaskLogKind]
    TASK_LOG_KIND_ROUTER: _ClassVar[TaskLogKind]
    TASK_LOG_KIND_MODEL: _ClassVar[TaskLogKind]
    TASK_LOG_KIND_TOOL: _ClassVar[TaskLogKind]
BUILD_RUNTIME_UNSPECIFIED: BuildRuntime
BUILD_RUNTIME_DOCKER: BuildRuntime
BUILD_RUNTIME_UV: BuildRuntime
TASK_STATUS_UNSPECIFIED: TaskStatus
TASK_STATUS_PENDING: TaskStatus
TASK_STATUS_RUNNING: TaskStatus
TASK_STATUS_SUCCEEDED: TaskStatus
TASK_STATUS_FAILED: TaskStatus
TASK_LOG_KIND_UNSPECIFIED: TaskLogKind
TASK_LOG_KIND_ROUTER: TaskLogKind
TASK_LOG_KIND_MODEL: TaskLogKind
TASK_LOG_KIND_TOOL: TaskLogKind

class ChatRequest(_message.Message):
    __slots__ = ("message", "chat_id")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CHAT_ID_FIELD_NUMBER: _ClassVar[int]
    message: str
    chat_id: str
    def __init__(self, message: _Optional[str] = ..., chat_id: _Optional[str] = ...) -> None: ...

class ChatResponse(_message.Message):
    __slots__ = ("response", "chat_id", "task_ids")
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    CHAT_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_IDS_FIELD_NUMBER: _ClassVar[int]
    response: str
    chat_id: str
    task_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, response: _Optional[str] = ..., chat_id: _Optional[str] = ..., task_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class TaskSpec(_message.Message):
    __slots__ = ("description", "tool_name", "inputs", "outputs", "acceptance_checks", "preferred_runtime")
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    ACCEPTANCE_CHECKS_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_RUNTIME_FIELD_NUMBER: _ClassVar[int]
    description: str
    tool_name: str
    inputs: str
    outputs: str
    acceptance_checks: _containers.RepeatedScalarFieldContainer[str]
    preferred_runtime: BuildRuntime
    def __init__(self, description: _Optional[str] = ..., tool_name: _Optional[str] = ..., inputs: _Optional[str] = ..., outputs: _Optional[str] = ..., acceptance_checks: _Optional[_Iterable[str]] = ..., preferred_runtime: _Optional[_Union[BuildRuntime, str]] = ...) -> None: ...

class TaskLogEntry(_message.Message):
    __slots__ = ("time", "kind", "text", "tool", "call_id", "call_status")
    TIME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    CALL_ID_FIELD_NUMBER: _ClassVar[int]
    CALL_STATUS_FIELD_NUMBER: _ClassVar[int]
    time: _timestamp_pb2.Timestamp
    kind: TaskLogKind
    text: str
    tool: str
    call_id: str
    call_status: _common_pb2.CallStatus
    def __init__(self, time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., kind: _Optional[_Union[TaskLogKind, str]] = ..., text: _Optional[str] = ..., tool: _Optional[str] = ..., call_id: _Optional[str] = ..., call_status: _Optional[_Union[_common_pb2.CallStatus, str]] = ...) -> None: ...

class Task(_message.Message):
    __slots__ = ("id", "spec", "status", "owner", "chat_id", "trace_id", "created_at", "started_at", "finished_at", "log", "tool_name", "error", "steps", "tokens", "runner")
    ID_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    CHAT_ID_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    LOG_FIELD_NUMBER: _ClassVar[int]
    TOOL_NAME_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    RUNNER_FIELD_NUMBER: _ClassVar[int]
    id: str
    spec: TaskSpec
    status: TaskStatus
    owner: _common_pb2.Principal
    chat_id: str
    trace_id: str
    created_at: _timestamp_pb2.Timestamp
    started_at: _timestamp_pb2.Timestamp
    finished_at: _timestamp_pb2.Timestamp
    log: _containers.RepeatedCompositeFieldContainer[TaskLogEntry]
    tool_name: str
    error: _common_pb2.CallError
    steps: int
    tokens: int
    runner: str
    def __init__(self, id: _Optional[str] = ..., spec: _Optional[_Union[TaskSpec, _Mapping]] = ..., status: _Optional[_Union[TaskStatus, str]] = ..., owner: _Optional[_Union[_common_pb2.Principal, _Mapping]] = ..., chat_id: _Optional[str] = ..., trace_id: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., started_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., finished_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., log: _Optional[_Iterable[_Union[TaskLogEntry, _Mapping]]] = ..., tool_name: _Optional[str] = ..., error: _Optional[_Union[_common_pb2.CallError, _Mapping]] = ..., steps: _Optional[int] = ..., tokens: _Optional[int] = ..., runner: _Optional[str] = ...) -> None: ...

class TaskLog(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[TaskLogEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[TaskLogEntry, _Mapping]]] = ...) -> None: ...

class SubmitTaskRequest(_message.Message):
    __slots__ = ("spec", "chat_id")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    CHAT_ID_FIELD_NUMBER: _ClassVar[int]
    spec: TaskSpec
    chat_id: str
    def __init__(self, spec: _Optional[_Union[TaskSpec, _Mapping]] = ..., chat_id: _Optional[str] = ...) -> None: ...

class SubmitTaskResponse(_message.Message):
    __slots__ = ("task", "queue_position")
    TASK_FIELD_NUMBER: _ClassVar[int]
    QUEUE_POSITION_FIELD_NUMBER: _ClassVar[int]
    task: Task
    queue_position: int
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ..., queue_position: _Optional[int] = ...) -> None: ...

class GetTaskRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class GetTaskResponse(_message.Message):
    __slots__ = ("task",)
    TASK_FIELD_NUMBER: _ClassVar[int]
    task: Task
    def __init__(self, task: _Optional[_Union[Task, _Mapping]] = ...) -> None: ...

class ListTasksRequest(_message.Message):
    __slots__ = ("status", "page_size", "page_token")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    status: TaskStatus
    page_size: int
    page_token: str
    def __init__(self, status: _Optional[_Union[TaskStatus, str]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListTasksResponse(_message.Message):
    __slots__ = ("tasks", "next_page_token")
    TASKS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[Task]
    next_page_token: str
    def __init__(self, tasks: _Optional[_Iterable[_Union[Task, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class GetSystemStatusRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ToolCounts(_message.Message):
    __slots__ = ("total", "active", "deprecated", "disabled")
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    DEPRECATED_FIELD_NUMBER: _ClassVar[int]
    DISABLED_FIELD_NUMBER: _ClassVar[int]
    total: int
    active: int
    deprecated: int
    disabled: int
    def __init__(self, total: _Optional[int] = ..., active: _Optional[int] = ..., deprecated: _Optional[int] = ..., disabled: _Optional[int] = ...) -> None: ...

class CodingAgentStatus(_message.Message):
    __slots__ = ("running_count", "running_task_ids", "queued_count", "recent_tasks", "concurrency")
    RUNNING_COUNT_FIELD_NUMBER: _ClassVar[int]
    RUNNING_TASK_IDS_FIELD_NUMBER: _ClassVar[int]
    QUEUED_COUNT_FIELD_NUMBER: _ClassVar[int]
    RECENT_TASKS_FIELD_NUMBER: _ClassVar[int]
    CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    running_count: int
    running_task_ids: _containers.RepeatedScalarFieldContainer[str]
    queued_count: int
    recent_tasks: _containers.RepeatedCompositeFieldContainer[Task]
    concurrency: int
    def __init__(self, running_count: _Optional[int] = ..., running_task_ids: _Optional[_Iterable[str]] = ..., queued_count: _Optional[int] = ..., recent_tasks: _Optional[_Iterable[_Union[Task, _Mapping]]] = ..., concurrency: _Optional[int] = ...) -> None: ...

class ChatWindow(_message.Message):
    __slots__ = ("chat_id", "owner", "im_window", "opened_at", "updated_at", "message_count")
    CHAT_ID_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    IM_WINDOW_FIELD_NUMBER: _ClassVar[int]
    OPENED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_COUNT_FIELD_NUMBER: _ClassVar[int]
    chat_id: str
    owner: _common_pb2.Principal
    im_window: bool
    opened_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    message_count: int
    def __init__(self, chat_id: _Optional[str] = ..., owner: _Optional[_Union[_common_pb2.Principal, _Mapping]] = ..., im_window: bool = ..., opened_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., message_count: _Optional[int] = ...) -> None: ...

class ImStatus(_message.Message):
    __slots__ = ("configured", "connected", "url", "contact", "connected_since", "reconnects", "last_error")
    CONFIGURED_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    CONTACT_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_SINCE_FIELD_NUMBER: _ClassVar[int]
    RECONNECTS_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    configured: bool
    connected: bool
    url: str
    contact: str
    connected_since: _timestamp_pb2.Timestamp
    reconnects: int
    last_error: str
    def __init__(self, configured: bool = ..., connected: bool = ..., url: _Optional[str] = ..., contact: _Optional[str] = ..., connected_since: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reconnects: _Optional[int] = ..., last_error: _Optional[str] = ...) -> None: ...

class ModelStatus(_message.Message):
    __slots__ = ("configured", "url", "model", "coding_url", "coding_model")
    CONFIGURED_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    CODING_URL_FIELD_NUMBER: _ClassVar[int]
    CODING_MODEL_FIELD_NUMBER: _ClassVar[int]
    configured: bool
    url: str
    model: str
    coding_url: str
    coding_model: str
    def __init__(self, configured: bool = ..., url: _Optional[str] = ..., model: _Optional[str] = ..., coding_url: _Optional[str] = ..., coding_model: _Optional[str] = ...) -> None: ...

class GetSystemStatusResponse(_message.Message):
    __slots__ = ("tools", "coding_agent", "windows", "im", "model")
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    CODING_AGENT_FIELD_NUMBER: _ClassVar[int]
    WINDOWS_FIELD_NUMBER: _ClassVar[int]
    IM_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    tools: ToolCounts
    coding_agent: CodingAgentStatus
    windows: _containers.RepeatedCompositeFieldContainer[ChatWindow]
    im: ImStatus
    model: ModelStatus
    def __init__(self, tools: _Optional[_Union[ToolCounts, _Mapping]] = ..., coding_agent: _Optional[_Union[CodingAgentStatus, _Mapping]] = ..., windows: _Optional[_Iterable[_Union[ChatWindow, _Mapping]]] = ..., im: _Optional[_Union[ImStatus, _Mapping]] = ..., model: _Optional[_Union[ModelStatus, _Mapping]] = ...) -> None: ...

class ChatHistory(_message.Message):
    __slots__ = ("messages",)
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, messages: _Optional[_Iterable[str]] = ...) -> None: ...
