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

class ToolStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TOOL_STATUS_UNSPECIFIED: _ClassVar[ToolStatus]
    TOOL_STATUS_ACTIVE: _ClassVar[ToolStatus]
    TOOL_STATUS_DEPRECATED: _ClassVar[ToolStatus]
    TOOL_STATUS_DISABLED: _ClassVar[ToolStatus]

class RuntimeKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RUNTIME_KIND_UNSPECIFIED: _ClassVar[RuntimeKind]
    RUNTIME_KIND_GRPC: _ClassVar[RuntimeKind]
    RUNTIME_KIND_LOCAL: _ClassVar[RuntimeKind]
    RUNTIME_KIND_REMOTE: _ClassVar[RuntimeKind]
    RUNTIME_KIND_DOCKER: _ClassVar[RuntimeKind]
    RUNTIME_KIND_MCP: _ClassVar[RuntimeKind]

class LocalProtocol(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    LOCAL_PROTOCOL_UNSPECIFIED: _ClassVar[LocalProtocol]
    LOCAL_PROTOCOL_GRPC: _ClassVar[LocalProtocol]
    LOCAL_PROTOCOL_HTTP: _ClassVar[LocalProtocol]

class McpOperation(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MCP_OPERATION_UNSPECIFIED: _ClassVar[McpOperation]
    MCP_OPERATION_TOOL: _ClassVar[McpOperation]
    MCP_OPERATION_PROMPT: _ClassVar[McpOperation]
    MCP_OPERATION_RESOURCE: _ClassVar[McpOperation]
    MCP_OPERATION_RESOURCE_TEMPLATE: _ClassVar[McpOperation]

class TaskSupport(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_SUPPORT_UNSPECIFIED: _ClassVar[TaskSupport]
    TASK_SUPPORT_OPTIONAL: _ClassVar[TaskSupport]
    TASK_SUPPORT_REQUIRED: _ClassVar[TaskSupport]

class WatchEventType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WATCH_EVENT_TYPE_UNSPECIFIED: _ClassVar[WatchEventType]
    WATCH_EVENT_TYPE_SNAPSHOT: _ClassVar[WatchEventType]
    WATCH_EVENT_TYPE_SNAPSHOT_END: _ClassVar[WatchEventType]
    WATCH_EVENT_TYPE_PUT: _ClassVar[WatchEventType]
    WATCH_EVENT_TYPE_DELETE: _ClassVar[WatchEventType]

class SchemaFormat(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCHEMA_FORMAT_UNSPECIFIED: _ClassVar[SchemaFormat]
    SCHEMA_FORMAT_OPENAI: _ClassVar[SchemaFormat]
    SCHEMA_FORMAT_ANTHROPIC: _ClassVar[SchemaFormat]
    SCHEMA_FORMAT_MCP: _ClassVar[SchemaFormat]
TOOL_STATUS_UNSPECIFIED: ToolStatus
TOOL_STATUS_ACTIVE: ToolStatus
TOOL_STATUS_DEPRECATED: ToolStatus
TOOL_STATUS_DISABLED: ToolStatus
RUNTIME_KIND_UNSPECIFIED: RuntimeKind
RUNTIME_KIND_GRPC: RuntimeKind
RUNTIME_KIND_LOCAL: RuntimeKind
RUNTIME_KIND_REMOTE: RuntimeKind
RUNTIME_KIND_DOCKER: RuntimeKind
RUNTIME_KIND_MCP: RuntimeKind
LOCAL_PROTOCOL_UNSPECIFIED: LocalProtocol
LOCAL_PROTOCOL_GRPC: LocalProtocol
LOCAL_PROTOCOL_HTTP: LocalProtocol
MCP_OPERATION_UNSPECIFIED: McpOperation
MCP_OPERATION_TOOL: McpOperation
MCP_OPERATION_PROMPT: McpOperation
MCP_OPERATION_RESOURCE: McpOperation
MCP_OPERATION_RESOURCE_TEMPLATE: McpOperation
TASK_SUPPORT_UNSPECIFIED: TaskSupport
TASK_SUPPORT_OPTIONAL: TaskSupport
TASK_SUPPORT_REQUIRED: TaskSupport
WATCH_EVENT_TYPE_UNSPECIFIED: WatchEventType
WATCH_EVENT_TYPE_SNAPSHOT: WatchEventType
WATCH_EVENT_TYPE_SNAPSHOT_END: WatchEventType
WATCH_EVENT_TYPE_PUT: WatchEventType
WATCH_EVENT_TYPE_DELETE: WatchEventType
SCHEMA_FORMAT_UNSPECIFIED: SchemaFormat
SCHEMA_FORMAT_OPENAI: SchemaFormat
SCHEMA_FORMAT_ANTHROPIC: SchemaFormat
SCHEMA_FORMAT_MCP: SchemaFormat

class GrpcRuntime(_message.Message):
    __slots__ = ("address",)
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    address: str
    def __init__(self, address: _Optional[str] = ...) -> None: ...

class LocalRuntime(_message.Message):
    __slots__ = ("command", "args", "env", "protocol", "working_dir", "max_concurrency", "idle_timeout_ms", "http_path", "min_instances", "max_instances", "warm_hours", "health_interval_ms")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIR_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    IDLE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    HTTP_PATH_FIELD_NUMBER: _ClassVar[int]
    MIN_INSTANCES_FIELD_NUMBER: _ClassVar[int]
    MAX_INSTANCES_FIELD_NUMBER: _ClassVar[int]
    WARM_HOURS_FIELD_NUMBER: _ClassVar[int]
    HEALTH_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    command: str
    args: _containers.RepeatedScalarFieldContainer[str]
    env: _containers.ScalarMap[str, str]
    protocol: LocalProtocol
    working_dir: str
    max_concurrency: int
    idle_timeout_ms: int
    http_path: str
    min_instances: int
    max_instances: int
    warm_hours: _containers.RepeatedCompositeFieldContainer[WarmHours]
    health_interval_ms: int
    def __init__(self, command: _Optional[str] = ..., args: _Optional[_Iterable[str]] = ..., env: _Optional[_Mapping[str, str]] = ..., protocol: _Optional[_Union[LocalProtocol, str]] = ..., working_dir: _Optional[str] = ..., max_concurrency: _Optional[int] = ..., idle_timeout_ms: _Optional[int] = ..., http_path: _Optional[str] = ..., min_instances: _Optional[int] = ..., max_instances: _Optional[int] = ..., warm_hours: _Optional[_Iterable[_Union[WarmHours, _Mapping]]] = ..., health_interval_ms: _Optional[int] = ...) -> None: ...

class RemoteRuntime(_message.Message):
    __slots__ = ("url", "headers")
    class HeadersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    URL_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    url: str
    headers: _containers.ScalarMap[str, str]
    def __init__(self, url: _Optional[str] = ..., headers: _Optional[_Mapping[str, str]] = ...) -> None: ...

class DockerRuntime(_message.Message):
    __slots__ = ("image", "command", "env", "port", "protocol", "http_path", "resources", "mounts", "secrets", "user", "max_concurrency", "idle_timeout_ms", "min_instances", "max_instances", "warm_hours", "health_interval_ms")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_FIELD_NUMBER: _ClassVar[int]
    HTTP_PATH_FIELD_NUMBER: _ClassVar[int]
    RESOURCES_FIELD_NUMBER: _ClassVar[int]
    MOUNTS_FIELD_NUMBER: _ClassVar[int]
    SECRETS_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    MAX_CONCURRENCY_FIELD_NUMBER: _ClassVar[int]
    IDLE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    MIN_INSTANCES_FIELD_NUMBER: _ClassVar[int]
    MAX_INSTANCES_FIELD_NUMBER: _ClassVar[int]
    WARM_HOURS_FIELD_NUMBER: _ClassVar[int]
    HEALTH_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    image: str
    command: _containers.RepeatedScalarFieldContainer[str]
    env: _containers.ScalarMap[str, str]
    port: int
    protocol: LocalProtocol
    http_path: str
    resources: DockerResources
    mounts: _containers.RepeatedCompositeFieldContainer[DockerMount]
    secrets: _containers.RepeatedCompositeFieldContainer[DockerSecret]
    user: str
    max_concurrency: int
    idle_timeout_ms: int
    min_instances: int
    max_instances: int
    warm_hours: _containers.RepeatedCompositeFieldContainer[WarmHours]
    health_interval_ms: int
    def __init__(self, image: _Optional[str] = ..., command: _Optional[_Iterable[str]] = ..., env: _Optional[_Mapping[str, str]] = ..., port: _Optional[int] = ..., protocol: _Optional[_Union[LocalProtocol, str]] = ..., http_path: _Optional[str] = ..., resources: _Optional[_Union[DockerResources, _Mapping]] = ..., mounts: _Optional[_Iterable[_Union[DockerMount, _Mapping]]] = ..., secrets: _Optional[_Iterable[_Union[DockerSecret, _Mapping]]] = ..., user: _Optional[str] = ..., max_concurrency: _Optional[int] = ..., idle_timeout_ms: _Optional[int] = ..., min_instances: _Optional[int] = ..., max_instances: _Optional[int] = ..., warm_hours: _Optional[_Iterable[_Union[WarmHours, _Mapping]]] = ..., health_interval_ms: _Optional[int] = ...) -> None: ...

class WarmHours(_message.Message):
    __slots__ = ("start_hour", "end_hour", "weekdays")
    START_HOUR_FIELD_NUMBER: _ClassVar[int]
    END_HOUR_FIELD_NUMBER: _ClassVar[int]
    WEEKDAYS_FIELD_NUMBER: _ClassVar[int]
    start_hour: int
    end_hour: int
    weekdays: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, start_hour: _Optional[int] = ..., end_hour: _Optional[int] = ..., weekdays: _Optional[_Iterable[int]] = ...) -> None: ...

class DockerResources(_message.Message):
    __slots__ = ("memory_bytes", "cpu_millis", "pids")
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    CPU_MILLIS_FIELD_NUMBER: _ClassVar[int]
    PIDS_FIELD_NUMBER: _ClassVar[int]
    memory_bytes: int
    cpu_millis: int
    pids: int
    def __init__(self, memory_bytes: _Optional[int] = ..., cpu_millis: _Optional[int] = ..., pids: _Optional[int] = ...) -> None: ...

class DockerMount(_message.Message):
    __slots__ = ("host_path", "container_path", "writable")
    HOST_PATH_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_PATH_FIELD_NUMBER: _ClassVar[int]
    WRITABLE_FIELD_NUMBER: _ClassVar[int]
    host_path: str
    container_path: str
    writable: bool
    def __init__(self, host_path: _Optional[str] = ..., container_path: _Optional[str] = ..., writable: bool = ...) -> None: ...

class DockerSecret(_message.Message):
    __slots__ = ("name", "env")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    name: str
    env: str
    def __init__(self, name: _Optional[str] = ..., env: _Optional[str] = ...) -> None: ...

class McpRuntime(_message.Message):
    __slots__ = ("url", "headers", "command", "args", "env", "working_dir", "tool", "idle_timeout_ms", "operation", "listing")
    class HeadersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    URL_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    COMMAND_FIELD_NUMBER: _ClassVar[int]
    ARGS_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    WORKING_DIR_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    IDLE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    LISTING_FIELD_NUMBER: _ClassVar[int]
    url: str
    headers: _containers.ScalarMap[str, str]
    command: str
    args: _containers.RepeatedScalarFieldContainer[str]
    env: _containers.ScalarMap[str, str]
    working_dir: str
    tool: str
    idle_timeout_ms: int
    operation: McpOperation
    listing: _struct_pb2.Struct
    def __init__(self, url: _Optional[str] = ..., headers: _Optional[_Mapping[str, str]] = ..., command: _Optional[str] = ..., args: _Optional[_Iterable[str]] = ..., env: _Optional[_Mapping[str, str]] = ..., working_dir: _Optional[str] = ..., tool: _Optional[str] = ..., idle_timeout_ms: _Optional[int] = ..., operation: _Optional[_Union[McpOperation, str]] = ..., listing: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class Runtime(_message.Message):
    __slots__ = ("grpc", "local", "remote", "docker", "mcp")
    GRPC_FIELD_NUMBER: _ClassVar[int]
    LOCAL_FIELD_NUMBER: _ClassVar[int]
    REMOTE_FIELD_NUMBER: _ClassVar[int]
    DOCKER_FIELD_NUMBER: _ClassVar[int]
    MCP_FIELD_NUMBER: _ClassVar[int]
    grpc: GrpcRuntime
    local: LocalRuntime
    remote: RemoteRuntime
    docker: DockerRuntime
    mcp: McpRuntime
    def __init__(self, grpc: _Optional[_Union[GrpcRuntime, _Mapping]] = ..., local: _Optional[_Union[LocalRuntime, _Mapping]] = ..., remote: _Optional[_Union[RemoteRuntime, _Mapping]] = ..., docker: _Optional[_Union[DockerRuntime, _Mapping]] = ..., mcp: _Optional[_Union[McpRuntime, _Mapping]] = ...) -> None: ...

class ToolAnnotations(_message.Message):
    __slots__ = ("title", "destructive", "open_world")
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DESTRUCTIVE_FIELD_NUMBER: _ClassVar[int]
    OPEN_WORLD_FIELD_NUMBER: _ClassVar[int]
    title: str
    destructive: bool
    open_world: bool
    def __init__(self, title: _Optional[str] = ..., destructive: bool = ..., open_world: bool = ...) -> None: ...

class RetryPolicy(_message.Message):
    __slots__ = ("max_attempts", "initial_backoff_ms", "max_backoff_ms")
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    INITIAL_BACKOFF_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_BACKOFF_MS_FIELD_NUMBER: _ClassVar[int]
    max_attempts: int
    initial_backoff_ms: int
    max_backoff_ms: int
    def __init__(self, max_attempts: _Optional[int] = ..., initial_backoff_ms: _Optional[int] = ..., max_backoff_ms: _Optional[int] = ...) -> None: ...

class ToolSpec(_message.Message):
    __slots__ = ("name", "version", "description", "category", "input_schema", "output_schema", "required_scopes", "timeout_ms", "retry_policy", "idempotent", "side_effects", "knowhub_slugs", "status", "runtime", "labels", "reporters", "annotations", "requires_approval", "approver_roles", "requires_confirmation", "task_support", "cache_ttl_ms", "cache_max_entries", "price", "circuit_breaker", "secrets")
    class LabelsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    INPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    REQUIRED_SCOPES_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    RETRY_POLICY_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENT_FIELD_NUMBER: _ClassVar[int]
    SIDE_EFFECTS_FIELD_NUMBER: _ClassVar[int]
    KNOWHUB_SLUGS_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    REPORTERS_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    REQUIRES_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    APPROVER_ROLES_FIELD_NUMBER: _ClassVar[int]
    REQUIRES_CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    TASK_SUPPORT_FIELD_NUMBER: _ClassVar[int]
    CACHE_TTL_MS_FIELD_NUMBER: _ClassVar[int]
    CACHE_MAX_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    PRICE_FIELD_NUMBER: _ClassVar[int]
    CIRCUIT_BREAKER_FIELD_NUMBER: _ClassVar[int]
    SECRETS_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    description: str
    category: str
    input_schema: _struct_pb2.Struct
    output_schema: _struct_pb2.Struct
    required_scopes: _containers.RepeatedScalarFieldContainer[str]
    timeout_ms: int
    retry_policy: RetryPolicy
    idempotent: bool
    side_effects: bool
    knowhub_slugs: _containers.RepeatedScalarFieldContainer[str]
    status: ToolStatus
    runtime: Runtime
    labels: _containers.ScalarMap[str, str]
    reporters: _containers.RepeatedScalarFieldContainer[str]
    annotations: ToolAnnotations
    requires_approval: bool
    approver_roles: _containers.RepeatedScalarFieldContainer[str]
    requires_confirmation: bool
    task_support: TaskSupport
    cache_ttl_ms: int
    cache_max_entries: int
    price: Price
    circuit_breaker: CircuitBreaker
    secrets: _containers.RepeatedCompositeFieldContainer[SecretInjection]
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., description: _Optional[str] = ..., category: _Optional[str] = ..., input_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., output_schema: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., required_scopes: _Optional[_Iterable[str]] = ..., timeout_ms: _Optional[int] = ..., retry_policy: _Optional[_Union[RetryPolicy, _Mapping]] = ..., idempotent: bool = ..., side_effects: bool = ..., knowhub_slugs: _Optional[_Iterable[str]] = ..., status: _Optional[_Union[ToolStatus, str]] = ..., runtime: _Optional[_Union[Runtime, _Mapping]] = ..., labels: _Optional[_Mapping[str, str]] = ..., reporters: _Optional[_Iterable[str]] = ..., annotations: _Optional[_Union[ToolAnnotations, _Mapping]] = ..., requires_approval: bool = ..., approver_roles: _Optional[_Iterable[str]] = ..., requires_confirmation: bool = ..., task_support: _Optional[_Union[TaskSupport, str]] = ..., cache_ttl_ms: _Optional[int] = ..., cache_max_entries: _Optional[int] = ..., price: _Optional[_Union[Price, _Mapping]] = ..., circuit_breaker: _Optional[_Union[CircuitBreaker, _Mapping]] = ..., secrets: _Optional[_Iterable[_Union[SecretInjection, _Mapping]]] = ...) -> None: ...

class Price(_message.Message):
    __slots__ = ("currency", "per_call_micros", "per_second_micros")
    CURRENCY_FIELD_NUMBER: _ClassVar[int]
    PER_CALL_MICROS_FIELD_NUMBER: _ClassVar[int]
    PER_SECOND_MICROS_FIELD_NUMBER: _ClassVar[int]
    currency: str
    per_call_micros: int
    per_second_micros: int
    def __init__(self, currency: _Optional[str] = ..., per_call_micros: _Optional[int] = ..., per_second_micros: _Optional[int] = ...) -> None: ...

class CircuitBreaker(_message.Message):
    __slots__ = ("failures", "open_ms", "disabled")
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    OPEN_MS_FIELD_NUMBER: _ClassVar[int]
    DISABLED_FIELD_NUMBER: _ClassVar[int]
    failures: int
    open_ms: int
    disabled: bool
    def __init__(self, failures: _Optional[int] = ..., open_ms: _Optional[int] = ..., disabled: bool = ...) -> None: ...

class SecretInjection(_message.Message):
    __slots__ = ("secret", "oauth_provider", "header", "query", "env", "file", "prefix")
    SECRET_FIELD_NUMBER: _ClassVar[int]
    OAUTH_PROVIDER_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    QUERY_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    secret: str
    oauth_provider: str
    header: str
    query: str
    env: str
    file: str
    prefix: str
    def __init__(self, secret: _Optional[str] = ..., oauth_provider: _Optional[str] = ..., header: _Optional[str] = ..., query: _Optional[str] = ..., env: _Optional[str] = ..., file: _Optional[str] = ..., prefix: _Optional[str] = ...) -> None: ...

class Tool(_message.Message):
    __slots__ = ("spec", "schema_hash", "revision", "groups", "created_at", "updated_at", "updated_by", "definition_hash", "history")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_HASH_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    UPDATED_BY_FIELD_NUMBER: _ClassVar[int]
    DEFINITION_HASH_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    spec: ToolSpec
    schema_hash: str
    revision: int
    groups: _containers.RepeatedScalarFieldContainer[str]
    created_at: _timestamp_pb2.Timestamp
    updated_at: _timestamp_pb2.Timestamp
    updated_by: str
    definition_hash: str
    history: _containers.RepeatedCompositeFieldContainer[ToolDefinition]
    def __init__(self, spec: _Optional[_Union[ToolSpec, _Mapping]] = ..., schema_hash: _Optional[str] = ..., revision: _Optional[int] = ..., groups: _Optional[_Iterable[str]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., updated_by: _Optional[str] = ..., definition_hash: _Optional[str] = ..., history: _Optional[_Iterable[_Union[ToolDefinition, _Mapping]]] = ...) -> None: ...

class ToolDefinition(_message.Message):
    __slots__ = ("revision", "version", "definition_hash", "schema_hash", "description_hash", "runtime_hash", "changed", "time")
    REVISION_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DEFINITION_HASH_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_HASH_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_HASH_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_HASH_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    revision: int
    version: str
    definition_hash: str
    schema_hash: str
    description_hash: str
    runtime_hash: str
    changed: _containers.RepeatedScalarFieldContainer[str]
    time: _timestamp_pb2.Timestamp
    def __init__(self, revision: _Optional[int] = ..., version: _Optional[str] = ..., definition_hash: _Optional[str] = ..., schema_hash: _Optional[str] = ..., description_hash: _Optional[str] = ..., runtime_hash: _Optional[str] = ..., changed: _Optional[_Iterable[str]] = ..., time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class Group(_message.Message):
    __slots__ = ("name", "description", "tools", "example", "updated_at")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    EXAMPLE_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    tools: _containers.RepeatedScalarFieldContainer[str]
    example: str
    updated_at: _timestamp_pb2.Timestamp
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., tools: _Optional[_Iterable[str]] = ..., example: _Optional[str] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class RegisterToolRequest(_message.Message):
    __slots__ = ("tool",)
    TOOL_FIELD_NUMBER: _ClassVar[int]
    tool: ToolSpec
    def __init__(self, tool: _Optional[_Union[ToolSpec, _Mapping]] = ...) -> None: ...

class RegisterToolResponse(_message.Message):
    __slots__ = ("tool",)
    TOOL_FIELD_NUMBER: _ClassVar[int]
    tool: Tool
    def __init__(self, tool: _Optional[_Union[Tool, _Mapping]] = ...) -> None: ...

class UpdateToolRequest(_message.Message):
    __slots__ = ("tool", "expected_revision")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    tool: ToolSpec
    expected_revision: int
    def __init__(self, tool: _Optional[_Union[ToolSpec, _Mapping]] = ..., expected_revision: _Optional[int] = ...) -> None: ...

class UpdateToolResponse(_message.Message):
    __slots__ = ("tool",)
    TOOL_FIELD_NUMBER: _ClassVar[int]
    tool: Tool
    def __init__(self, tool: _Optional[_Union[Tool, _Mapping]] = ...) -> None: ...

class SetToolSlugsRequest(_message.Message):
    __slots__ = ("name", "knowhub_slugs", "expected_revision")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KNOWHUB_SLUGS_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    name: str
    knowhub_slugs: _containers.RepeatedScalarFieldContainer[str]
    expected_revision: int
    def __init__(self, name: _Optional[str] = ..., knowhub_slugs: _Optional[_Iterable[str]] = ..., expected_revision: _Optional[int] = ...) -> None: ...

class SetToolSlugsResponse(_message.Message):
    __slots__ = ("tool",)
    TOOL_FIELD_NUMBER: _ClassVar[int]
    tool: Tool
    def __init__(self, tool: _Optional[_Union[Tool, _Mapping]] = ...) -> None: ...

class DeregisterToolRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeregisterToolResponse(_message.Message):
    __slots__ = ("removed_from_groups",)
    REMOVED_FROM_GROUPS_FIELD_NUMBER: _ClassVar[int]
    removed_from_groups: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, removed_from_groups: _Optional[_Iterable[str]] = ...) -> None: ...

class GetToolRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetToolResponse(_message.Message):
    __slots__ = ("tool",)
    TOOL_FIELD_NUMBER: _ClassVar[int]
    tool: Tool
    def __init__(self, tool: _Optional[_Union[Tool, _Mapping]] = ...) -> None: ...

class ListToolsRequest(_message.Message):
    __slots__ = ("category", "keyword", "runtime_kind", "group", "status", "page_size", "page_token")
    CATEGORY_FIELD_NUMBER: _ClassVar[int]
    KEYWORD_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_KIND_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    category: str
    keyword: str
    runtime_kind: RuntimeKind
    group: str
    status: ToolStatus
    page_size: int
    page_token: str
    def __init__(self, category: _Optional[str] = ..., keyword: _Optional[str] = ..., runtime_kind: _Optional[_Union[RuntimeKind, str]] = ..., group: _Optional[str] = ..., status: _Optional[_Union[ToolStatus, str]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListToolsResponse(_message.Message):
    __slots__ = ("tools", "next_page_token")
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[Tool]
    next_page_token: str
    def __init__(self, tools: _Optional[_Iterable[_Union[Tool, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class WatchToolsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class WatchToolsResponse(_message.Message):
    __slots__ = ("type", "tool", "name", "changed")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    type: WatchEventType
    tool: Tool
    name: str
    changed: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, type: _Optional[_Union[WatchEventType, str]] = ..., tool: _Optional[_Union[Tool, _Mapping]] = ..., name: _Optional[str] = ..., changed: _Optional[_Iterable[str]] = ...) -> None: ...

class PutGroupRequest(_message.Message):
    __slots__ = ("group",)
    GROUP_FIELD_NUMBER: _ClassVar[int]
    group: Group
    def __init__(self, group: _Optional[_Union[Group, _Mapping]] = ...) -> None: ...

class PutGroupResponse(_message.Message):
    __slots__ = ("group",)
    GROUP_FIELD_NUMBER: _ClassVar[int]
    group: Group
    def __init__(self, group: _Optional[_Union[Group, _Mapping]] = ...) -> None: ...

class GetGroupRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetGroupResponse(_message.Message):
    __slots__ = ("group",)
    GROUP_FIELD_NUMBER: _ClassVar[int]
    group: Group
    def __init__(self, group: _Optional[_Union[Group, _Mapping]] = ...) -> None: ...

class ListGroupsRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListGroupsResponse(_message.Message):
    __slots__ = ("groups", "next_page_token")
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    groups: _containers.RepeatedCompositeFieldContainer[Group]
    next_page_token: str
    def __init__(self, groups: _Optional[_Iterable[_Union[Group, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class DeleteGroupRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteGroupResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListRuntimesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RuntimeSummary(_message.Message):
    __slots__ = ("kind", "tool_count", "active_count", "deprecated_count", "disabled_count", "tools")
    KIND_FIELD_NUMBER: _ClassVar[int]
    TOOL_COUNT_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_COUNT_FIELD_NUMBER: _ClassVar[int]
    DEPRECATED_COUNT_FIELD_NUMBER: _ClassVar[int]
    DISABLED_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    kind: RuntimeKind
    tool_count: int
    active_count: int
    deprecated_count: int
    disabled_count: int
    tools: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, kind: _Optional[_Union[RuntimeKind, str]] = ..., tool_count: _Optional[int] = ..., active_count: _Optional[int] = ..., deprecated_count: _Optional[int] = ..., disabled_count: _Optional[int] = ..., tools: _Optional[_Iterable[str]] = ...) -> None: ...

class ListRuntimesResponse(_message.Message):
    __slots__ = ("runtimes",)
    RUNTIMES_FIELD_NUMBER: _ClassVar[int]
    runtimes: _containers.RepeatedCompositeFieldContainer[RuntimeSummary]
    def __init__(self, runtimes: _Optional[_Iterable[_Union[RuntimeSummary, _Mapping]]] = ...) -> None: ...

class ExportToolSchemasRequest(_message.Message):
    __slots__ = ("format", "group", "names", "include_deprecated")
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_DEPRECATED_FIELD_NUMBER: _ClassVar[int]
    format: SchemaFormat
    group: str
    names: _containers.RepeatedScalarFieldContainer[str]
    include_deprecated: bool
    def __init__(self, format: _Optional[_Union[SchemaFormat, str]] = ..., group: _Optional[str] = ..., names: _Optional[_Iterable[str]] = ..., include_deprecated: bool = ...) -> None: ...

class ExportedTool(_message.Message):
    __slots__ = ("tool", "exported_name", "definition")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    EXPORTED_NAME_FIELD_NUMBER: _ClassVar[int]
    DEFINITION_FIELD_NUMBER: _ClassVar[int]
    tool: str
    exported_name: str
    definition: _struct_pb2.Struct
    def __init__(self, tool: _Optional[str] = ..., exported_name: _Optional[str] = ..., definition: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class ExportToolSchemasResponse(_message.Message):
    __slots__ = ("tools",)
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    tools: _containers.RepeatedCompositeFieldContainer[ExportedTool]
    def __init__(self, tools: _Optional[_Iterable[_Union[ExportedTool, _Mapping]]] = ...) -> None: ...
