import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PrincipalKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PRINCIPAL_KIND_UNSPECIFIED: _ClassVar[PrincipalKind]
    PRINCIPAL_KIND_AGENT: _ClassVar[PrincipalKind]
    PRINCIPAL_KIND_USER: _ClassVar[PrincipalKind]
    PRINCIPAL_KIND_ROLE: _ClassVar[PrincipalKind]

class ResourceKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RESOURCE_KIND_UNSPECIFIED: _ClassVar[ResourceKind]
    RESOURCE_KIND_TOOL: _ClassVar[ResourceKind]
    RESOURCE_KIND_GLOB: _ClassVar[ResourceKind]
    RESOURCE_KIND_GROUP: _ClassVar[ResourceKind]

class Effect(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EFFECT_UNSPECIFIED: _ClassVar[Effect]
    EFFECT_ALLOW: _ClassVar[Effect]
    EFFECT_DENY: _ClassVar[Effect]

class RateLimitSubject(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RATE_LIMIT_SUBJECT_UNSPECIFIED: _ClassVar[RateLimitSubject]
    RATE_LIMIT_SUBJECT_AGENT: _ClassVar[RateLimitSubject]
    RATE_LIMIT_SUBJECT_USER: _ClassVar[RateLimitSubject]
    RATE_LIMIT_SUBJECT_TOOL: _ClassVar[RateLimitSubject]
    RATE_LIMIT_SUBJECT_GRANT: _ClassVar[RateLimitSubject]

class BudgetSubject(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BUDGET_SUBJECT_UNSPECIFIED: _ClassVar[BudgetSubject]
    BUDGET_SUBJECT_AGENT: _ClassVar[BudgetSubject]
    BUDGET_SUBJECT_USER: _ClassVar[BudgetSubject]
    BUDGET_SUBJECT_GRANT: _ClassVar[BudgetSubject]

class BudgetPeriod(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BUDGET_PERIOD_UNSPECIFIED: _ClassVar[BudgetPeriod]
    BUDGET_PERIOD_DAY: _ClassVar[BudgetPeriod]
    BUDGET_PERIOD_MONTH: _ClassVar[BudgetPeriod]

class SecretToolKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SECRET_TOOL_KIND_UNSPECIFIED: _ClassVar[SecretToolKind]
    SECRET_TOOL_KIND_TOOL: _ClassVar[SecretToolKind]
    SECRET_TOOL_KIND_GLOB: _ClassVar[SecretToolKind]
    SECRET_TOOL_KIND_RUNTIME: _ClassVar[SecretToolKind]

class SecretHolderKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SECRET_HOLDER_KIND_UNSPECIFIED: _ClassVar[SecretHolderKind]
    SECRET_HOLDER_KIND_EVERYONE: _ClassVar[SecretHolderKind]
    SECRET_HOLDER_KIND_ROLE: _ClassVar[SecretHolderKind]
    SECRET_HOLDER_KIND_AGENT: _ClassVar[SecretHolderKind]
    SECRET_HOLDER_KIND_USER: _ClassVar[SecretHolderKind]

class SigningKeyState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SIGNING_KEY_STATE_UNSPECIFIED: _ClassVar[SigningKeyState]
    SIGNING_KEY_STATE_ACTIVE: _ClassVar[SigningKeyState]
    SIGNING_KEY_STATE_VERIFYING: _ClassVar[SigningKeyState]
PRINCIPAL_KIND_UNSPECIFIED: PrincipalKind
PRINCIPAL_KIND_AGENT: PrincipalKind
PRINCIPAL_KIND_USER: PrincipalKind
PRINCIPAL_KIND_ROLE: PrincipalKind
RESOURCE_KIND_UNSPECIFIED: ResourceKind
RESOURCE_KIND_TOOL: ResourceKind
RESOURCE_KIND_GLOB: ResourceKind
RESOURCE_KIND_GROUP: ResourceKind
EFFECT_UNSPECIFIED: Effect
EFFECT_ALLOW: Effect
EFFECT_DENY: Effect
RATE_LIMIT_SUBJECT_UNSPECIFIED: RateLimitSubject
RATE_LIMIT_SUBJECT_AGENT: RateLimitSubject
RATE_LIMIT_SUBJECT_USER: RateLimitSubject
RATE_LIMIT_SUBJECT_TOOL: RateLimitSubject
RATE_LIMIT_SUBJECT_GRANT: RateLimitSubject
BUDGET_SUBJECT_UNSPECIFIED: BudgetSubject
BUDGET_SUBJECT_AGENT: BudgetSubject
BUDGET_SUBJECT_USER: BudgetSubject
BUDGET_SUBJECT_GRANT: BudgetSubject
BUDGET_PERIOD_UNSPECIFIED: BudgetPeriod
BUDGET_PERIOD_DAY: BudgetPeriod
BUDGET_PERIOD_MONTH: BudgetPeriod
SECRET_TOOL_KIND_UNSPECIFIED: SecretToolKind
SECRET_TOOL_KIND_TOOL: SecretToolKind
SECRET_TOOL_KIND_GLOB: SecretToolKind
SECRET_TOOL_KIND_RUNTIME: SecretToolKind
SECRET_HOLDER_KIND_UNSPECIFIED: SecretHolderKind
SECRET_HOLDER_KIND_EVERYONE: SecretHolderKind
SECRET_HOLDER_KIND_ROLE: SecretHolderKind
SECRET_HOLDER_KIND_AGENT: SecretHolderKind
SECRET_HOLDER_KIND_USER: SecretHolderKind
SIGNING_KEY_STATE_UNSPECIFIED: SigningKeyState
SIGNING_KEY_STATE_ACTIVE: SigningKeyState
SIGNING_KEY_STATE_VERIFYING: SigningKeyState

class PrincipalRef(_message.Message):
    __slots__ = ("kind", "id")
    KIND_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    kind: PrincipalKind
    id: str
    def __init__(self, kind: _Optional[_Union[PrincipalKind, str]] = ..., id: _Optional[str] = ...) -> None: ...

class Resource(_message.Message):
    __slots__ = ("kind", "pattern")
    KIND_FIELD_NUMBER: _ClassVar[int]
    PATTERN_FIELD_NUMBER: _ClassVar[int]
    kind: ResourceKind
    pattern: str
    def __init__(self, kind: _Optional[_Union[ResourceKind, str]] = ..., pattern: _Optional[str] = ...) -> None: ...

class GrantSpec(_message.Message):
    __slots__ = ("principal", "resource", "scopes", "effect", "expires_at", "enabled", "description", "requires_approval", "requires_confirmation", "unlisted")
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    EFFECT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    REQUIRES_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    REQUIRES_CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    UNLISTED_FIELD_NUMBER: _ClassVar[int]
    principal: PrincipalRef
    resource: Resource
    scopes: _containers.RepeatedScalarFieldContainer[str]
    effect: Effect
    expires_at: _timestamp_pb2.Timestamp
    enabled: bool
    description: str
    requires_approval: bool
    requires_confirmation: bool
    unlisted: bool
    def __init__(self, principal: _Optional[_Union[PrincipalRef, _Mapping]] = ..., resource: _Optional[_Union[Resource, _Mapping]] = ..., scopes: _Optional[_Iterable[str]] = ..., effect: _Optional[_Union[Effect, str]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., enabled: bool = ..., description: _Optional[str] = ..., requires_approval: bool = ..., requires_confirmation: bool = ..., unlisted: bool = ...) -> None: ...

class Grant(_message.Message):
    __slots__ = ("id", "spec", "created_by", "created_at", "revision", "updated_by", "updated_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    UPDATED_BY_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    spec: GrantSpec
    created_by: str
    created_at: _timestamp_pb2.Timestamp
    revision: int
    updated_by: str
    updated_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., spec: _Optional[_Union[GrantSpec, _Mapping]] = ..., created_by: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., revision: _Optional[int] = ..., updated_by: _Optional[str] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class GrantRequest(_message.Message):
    __slots__ = ("grant",)
    GRANT_FIELD_NUMBER: _ClassVar[int]
    grant: GrantSpec
    def __init__(self, grant: _Optional[_Union[GrantSpec, _Mapping]] = ...) -> None: ...

class GrantResponse(_message.Message):
    __slots__ = ("grant",)
    GRANT_FIELD_NUMBER: _ClassVar[int]
    grant: Grant
    def __init__(self, grant: _Optional[_Union[Grant, _Mapping]] = ...) -> None: ...

class RevokeRequest(_message.Message):
    __slots__ = ("grant_id",)
    GRANT_ID_FIELD_NUMBER: _ClassVar[int]
    grant_id: str
    def __init__(self, grant_id: _Optional[str] = ...) -> None: ...

class RevokeResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class UpdateGrantRequest(_message.Message):
    __slots__ = ("grant_id", "grant", "expected_revision")
    GRANT_ID_FIELD_NUMBER: _ClassVar[int]
    GRANT_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    grant_id: str
    grant: GrantSpec
    expected_revision: int
    def __init__(self, grant_id: _Optional[str] = ..., grant: _Optional[_Union[GrantSpec, _Mapping]] = ..., expected_revision: _Optional[int] = ...) -> None: ...

class UpdateGrantResponse(_message.Message):
    __slots__ = ("grant",)
    GRANT_FIELD_NUMBER: _ClassVar[int]
    grant: Grant
    def __init__(self, grant: _Optional[_Union[Grant, _Mapping]] = ...) -> None: ...

class ListGrantsRequest(_message.Message):
    __slots__ = ("principal", "resource", "page_size", "page_token")
    PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    principal: PrincipalRef
    resource: str
    page_size: int
    page_token: str
    def __init__(self, principal: _Optional[_Union[PrincipalRef, _Mapping]] = ..., resource: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListGrantsResponse(_message.Message):
    __slots__ = ("grants", "next_page_token")
    GRANTS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    grants: _containers.RepeatedCompositeFieldContainer[Grant]
    next_page_token: str
    def __init__(self, grants: _Optional[_Iterable[_Union[Grant, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class CheckRequest(_message.Message):
    __slots__ = ("agent_id", "user_id", "roles", "tool")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    user_id: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    tool: str
    def __init__(self, agent_id: _Optional[str] = ..., user_id: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ..., tool: _Optional[str] = ...) -> None: ...

class Decision(_message.Message):
    __slots__ = ("allowed", "reason", "matched_grant_ids", "deny_grant_id", "missing_scopes", "denied_principal", "requires_approval", "requires_confirmation", "unlisted")
    ALLOWED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MATCHED_GRANT_IDS_FIELD_NUMBER: _ClassVar[int]
    DENY_GRANT_ID_FIELD_NUMBER: _ClassVar[int]
    MISSING_SCOPES_FIELD_NUMBER: _ClassVar[int]
    DENIED_PRINCIPAL_FIELD_NUMBER: _ClassVar[int]
    REQUIRES_APPROVAL_FIELD_NUMBER: _ClassVar[int]
    REQUIRES_CONFIRMATION_FIELD_NUMBER: _ClassVar[int]
    UNLISTED_FIELD_NUMBER: _ClassVar[int]
    allowed: bool
    reason: str
    matched_grant_ids: _containers.RepeatedScalarFieldContainer[str]
    deny_grant_id: str
    missing_scopes: _containers.RepeatedScalarFieldContainer[str]
    denied_principal: str
    requires_approval: bool
    requires_confirmation: bool
    unlisted: bool
    def __init__(self, allowed: bool = ..., reason: _Optional[str] = ..., matched_grant_ids: _Optional[_Iterable[str]] = ..., deny_grant_id: _Optional[str] = ..., missing_scopes: _Optional[_Iterable[str]] = ..., denied_principal: _Optional[str] = ..., requires_approval: bool = ..., requires_confirmation: bool = ..., unlisted: bool = ...) -> None: ...

class CheckResponse(_message.Message):
    __slots__ = ("decision",)
    DECISION_FIELD_NUMBER: _ClassVar[int]
    decision: Decision
    def __init__(self, decision: _Optional[_Union[Decision, _Mapping]] = ...) -> None: ...

class ApiKey(_message.Message):
    __slots__ = ("id", "agent_id", "user_id", "roles", "name", "created_at", "expires_at", "revoked", "created_by")
    ID_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    REVOKED_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    id: str
    agent_id: str
    user_id: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    name: str
    created_at: _timestamp_pb2.Timestamp
    expires_at: _timestamp_pb2.Timestamp
    revoked: bool
    created_by: str
    def __init__(self, id: _Optional[str] = ..., agent_id: _Optional[str] = ..., user_id: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ..., name: _Optional[str] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., revoked: bool = ..., created_by: _Optional[str] = ...) -> None: ...

class CreateApiKeyRequest(_message.Message):
    __slots__ = ("agent_id", "user_id", "roles", "name", "expires_at")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    user_id: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    name: str
    expires_at: _timestamp_pb2.Timestamp
    def __init__(self, agent_id: _Optional[str] = ..., user_id: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ..., name: _Optional[str] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CreateApiKeyResponse(_message.Message):
    __slots__ = ("api_key", "secret")
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    SECRET_FIELD_NUMBER: _ClassVar[int]
    api_key: ApiKey
    secret: str
    def __init__(self, api_key: _Optional[_Union[ApiKey, _Mapping]] = ..., secret: _Optional[str] = ...) -> None: ...

class RevokeApiKeyRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class RevokeApiKeyResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListApiKeysRequest(_message.Message):
    __slots__ = ("agent_id", "include_revoked", "page_size", "page_token")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_REVOKED_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    include_revoked: bool
    page_size: int
    page_token: str
    def __init__(self, agent_id: _Optional[str] = ..., include_revoked: bool = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListApiKeysResponse(_message.Message):
    __slots__ = ("api_keys", "next_page_token")
    API_KEYS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    api_keys: _containers.RepeatedCompositeFieldContainer[ApiKey]
    next_page_token: str
    def __init__(self, api_keys: _Optional[_Iterable[_Union[ApiKey, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ApiKeyRecord(_message.Message):
    __slots__ = ("api_key", "salt", "hash", "hash_algorithm")
    API_KEY_FIELD_NUMBER: _ClassVar[int]
    SALT_FIELD_NUMBER: _ClassVar[int]
    HASH_FIELD_NUMBER: _ClassVar[int]
    HASH_ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    api_key: ApiKey
    salt: str
    hash: str
    hash_algorithm: str
    def __init__(self, api_key: _Optional[_Union[ApiKey, _Mapping]] = ..., salt: _Optional[str] = ..., hash: _Optional[str] = ..., hash_algorithm: _Optional[str] = ...) -> None: ...

class RateLimitSpec(_message.Message):
    __slots__ = ("subject", "target", "requests_per_second", "burst", "calls_per_day", "description")
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    BURST_FIELD_NUMBER: _ClassVar[int]
    CALLS_PER_DAY_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    subject: RateLimitSubject
    target: str
    requests_per_second: float
    burst: int
    calls_per_day: int
    description: str
    def __init__(self, subject: _Optional[_Union[RateLimitSubject, str]] = ..., target: _Optional[str] = ..., requests_per_second: _Optional[float] = ..., burst: _Optional[int] = ..., calls_per_day: _Optional[int] = ..., description: _Optional[str] = ...) -> None: ...

class RateLimit(_message.Message):
    __slots__ = ("id", "spec", "updated_by", "updated_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    UPDATED_BY_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    spec: RateLimitSpec
    updated_by: str
    updated_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., spec: _Optional[_Union[RateLimitSpec, _Mapping]] = ..., updated_by: _Optional[str] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class PutRateLimitRequest(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: RateLimitSpec
    def __init__(self, limit: _Optional[_Union[RateLimitSpec, _Mapping]] = ...) -> None: ...

class PutRateLimitResponse(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: RateLimit
    def __init__(self, limit: _Optional[_Union[RateLimit, _Mapping]] = ...) -> None: ...

class DeleteRateLimitRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class DeleteRateLimitResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListRateLimitsRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListRateLimitsResponse(_message.Message):
    __slots__ = ("limits", "next_page_token")
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    limits: _containers.RepeatedCompositeFieldContainer[RateLimit]
    next_page_token: str
    def __init__(self, limits: _Optional[_Iterable[_Union[RateLimit, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class BudgetSpec(_message.Message):
    __slots__ = ("subject", "target", "period", "currency", "limit_micros", "description")
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    PERIOD_FIELD_NUMBER: _ClassVar[int]
    CURRENCY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_MICROS_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    subject: BudgetSubject
    target: str
    period: BudgetPeriod
    currency: str
    limit_micros: int
    description: str
    def __init__(self, subject: _Optional[_Union[BudgetSubject, str]] = ..., target: _Optional[str] = ..., period: _Optional[_Union[BudgetPeriod, str]] = ..., currency: _Optional[str] = ..., limit_micros: _Optional[int] = ..., description: _Optional[str] = ...) -> None: ...

class Budget(_message.Message):
    __slots__ = ("id", "spec", "updated_by", "updated_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    UPDATED_BY_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    spec: BudgetSpec
    updated_by: str
    updated_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., spec: _Optional[_Union[BudgetSpec, _Mapping]] = ..., updated_by: _Optional[str] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class PutBudgetRequest(_message.Message):
    __slots__ = ("budget",)
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    budget: BudgetSpec
    def __init__(self, budget: _Optional[_Union[BudgetSpec, _Mapping]] = ...) -> None: ...

class PutBudgetResponse(_message.Message):
    __slots__ = ("budget",)
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    budget: Budget
    def __init__(self, budget: _Optional[_Union[Budget, _Mapping]] = ...) -> None: ...

class DeleteBudgetRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class DeleteBudgetResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListBudgetsRequest(_message.Message):
    __slots__ = ("page_size", "page_token")
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListBudgetsResponse(_message.Message):
    __slots__ = ("budgets", "next_page_token")
    BUDGETS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    budgets: _containers.RepeatedCompositeFieldContainer[Budget]
    next_page_token: str
    def __init__(self, budgets: _Optional[_Iterable[_Union[Budget, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class SecretScope(_message.Message):
    __slots__ = ("tool_kind", "tool", "holder_kind", "holder")
    TOOL_KIND_FIELD_NUMBER: _ClassVar[int]
    TOOL_FIELD_NUMBER: _ClassVar[int]
    HOLDER_KIND_FIELD_NUMBER: _ClassVar[int]
    HOLDER_FIELD_NUMBER: _ClassVar[int]
    tool_kind: SecretToolKind
    tool: str
    holder_kind: SecretHolderKind
    holder: str
    def __init__(self, tool_kind: _Optional[_Union[SecretToolKind, str]] = ..., tool: _Optional[str] = ..., holder_kind: _Optional[_Union[SecretHolderKind, str]] = ..., holder: _Optional[str] = ...) -> None: ...

class Secret(_message.Message):
    __slots__ = ("id", "name", "scope", "version", "description", "updated_by", "updated_at")
    ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    UPDATED_BY_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    id: str
    name: str
    scope: SecretScope
    version: int
    description: str
    updated_by: str
    updated_at: _timestamp_pb2.Timestamp
    def __init__(self, id: _Optional[str] = ..., name: _Optional[str] = ..., scope: _Optional[_Union[SecretScope, _Mapping]] = ..., version: _Optional[int] = ..., description: _Optional[str] = ..., updated_by: _Optional[str] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class PutSecretRequest(_message.Message):
    __slots__ = ("name", "scope", "value", "description")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    name: str
    scope: SecretScope
    value: str
    description: str
    def __init__(self, name: _Optional[str] = ..., scope: _Optional[_Union[SecretScope, _Mapping]] = ..., value: _Optional[str] = ..., description: _Optional[str] = ...) -> None: ...

class PutSecretResponse(_message.Message):
    __slots__ = ("secret",)
    SECRET_FIELD_NUMBER: _ClassVar[int]
    secret: Secret
    def __init__(self, secret: _Optional[_Union[Secret, _Mapping]] = ...) -> None: ...

class DeleteSecretRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class DeleteSecretResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListSecretsRequest(_message.Message):
    __slots__ = ("name", "page_size", "page_token")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    name: str
    page_size: int
    page_token: str
    def __init__(self, name: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListSecretsResponse(_message.Message):
    __slots__ = ("secrets", "next_page_token")
    SECRETS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    secrets: _containers.RepeatedCompositeFieldContainer[Secret]
    next_page_token: str
    def __init__(self, secrets: _Optional[_Iterable[_Union[Secret, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class OAuthProviderSpec(_message.Message):
    __slots__ = ("name", "issuer", "authorization_endpoint", "token_endpoint", "revocation_endpoint", "client_id", "scopes", "resource", "token_exchange", "description")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ISSUER_FIELD_NUMBER: _ClassVar[int]
    AUTHORIZATION_ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    REVOCATION_ENDPOINT_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_FIELD_NUMBER: _ClassVar[int]
    TOKEN_EXCHANGE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    name: str
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    revocation_endpoint: str
    client_id: str
    scopes: _containers.RepeatedScalarFieldContainer[str]
    resource: str
    token_exchange: bool
    description: str
    def __init__(self, name: _Optional[str] = ..., issuer: _Optional[str] = ..., authorization_endpoint: _Optional[str] = ..., token_endpoint: _Optional[str] = ..., revocation_endpoint: _Optional[str] = ..., client_id: _Optional[str] = ..., scopes: _Optional[_Iterable[str]] = ..., resource: _Optional[str] = ..., token_exchange: bool = ..., description: _Optional[str] = ...) -> None: ...

class OAuthProvider(_message.Message):
    __slots__ = ("spec", "redirect_uri", "has_client_secret", "updated_by", "updated_at")
    SPEC_FIELD_NUMBER: _ClassVar[int]
    REDIRECT_URI_FIELD_NUMBER: _ClassVar[int]
    HAS_CLIENT_SECRET_FIELD_NUMBER: _ClassVar[int]
    UPDATED_BY_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_FIELD_NUMBER: _ClassVar[int]
    spec: OAuthProviderSpec
    redirect_uri: str
    has_client_secret: bool
    updated_by: str
    updated_at: _timestamp_pb2.Timestamp
    def __init__(self, spec: _Optional[_Union[OAuthProviderSpec, _Mapping]] = ..., redirect_uri: _Optional[str] = ..., has_client_secret: bool = ..., updated_by: _Optional[str] = ..., updated_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class PutOAuthProviderRequest(_message.Message):
    __slots__ = ("provider", "client_secret", "clear_client_secret")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    CLIENT_SECRET_FIELD_NUMBER: _ClassVar[int]
    CLEAR_CLIENT_SECRET_FIELD_NUMBER: _ClassVar[int]
    provider: OAuthProviderSpec
    client_secret: str
    clear_client_secret: bool
    def __init__(self, provider: _Optional[_Union[OAuthProviderSpec, _Mapping]] = ..., client_secret: _Optional[str] = ..., clear_client_secret: bool = ...) -> None: ...

class PutOAuthProviderResponse(_message.Message):
    __slots__ = ("provider",)
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    provider: OAuthProvider
    def __init__(self, provider: _Optional[_Union[OAuthProvider, _Mapping]] = ...) -> None: ...

class DeleteOAuthProviderRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteOAuthProviderResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListOAuthProvidersRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListOAuthProvidersResponse(_message.Message):
    __slots__ = ("providers",)
    PROVIDERS_FIELD_NUMBER: _ClassVar[int]
    providers: _containers.RepeatedCompositeFieldContainer[OAuthProvider]
    def __init__(self, providers: _Optional[_Iterable[_Union[OAuthProvider, _Mapping]]] = ...) -> None: ...

class ConnectAccountRequest(_message.Message):
    __slots__ = ("provider", "user_id")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    provider: str
    user_id: str
    def __init__(self, provider: _Optional[str] = ..., user_id: _Optional[str] = ...) -> None: ...

class ConnectAccountResponse(_message.Message):
    __slots__ = ("url", "expires_at")
    URL_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    url: str
    expires_at: _timestamp_pb2.Timestamp
    def __init__(self, url: _Optional[str] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class OAuthConnection(_message.Message):
    __slots__ = ("provider", "user_id", "version", "connected_at", "access_expires_at", "refreshed_at", "scopes", "has_refresh_token")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_AT_FIELD_NUMBER: _ClassVar[int]
    ACCESS_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    REFRESHED_AT_FIELD_NUMBER: _ClassVar[int]
    SCOPES_FIELD_NUMBER: _ClassVar[int]
    HAS_REFRESH_TOKEN_FIELD_NUMBER: _ClassVar[int]
    provider: str
    user_id: str
    version: int
    connected_at: _timestamp_pb2.Timestamp
    access_expires_at: _timestamp_pb2.Timestamp
    refreshed_at: _timestamp_pb2.Timestamp
    scopes: _containers.RepeatedScalarFieldContainer[str]
    has_refresh_token: bool
    def __init__(self, provider: _Optional[str] = ..., user_id: _Optional[str] = ..., version: _Optional[int] = ..., connected_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., access_expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., refreshed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., scopes: _Optional[_Iterable[str]] = ..., has_refresh_token: bool = ...) -> None: ...

class ListConnectionsRequest(_message.Message):
    __slots__ = ("provider", "user_id")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    provider: str
    user_id: str
    def __init__(self, provider: _Optional[str] = ..., user_id: _Optional[str] = ...) -> None: ...

class ListConnectionsResponse(_message.Message):
    __slots__ = ("connections",)
    CONNECTIONS_FIELD_NUMBER: _ClassVar[int]
    connections: _containers.RepeatedCompositeFieldContainer[OAuthConnection]
    def __init__(self, connections: _Optional[_Iterable[_Union[OAuthConnection, _Mapping]]] = ...) -> None: ...

class RevokeConnectionRequest(_message.Message):
    __slots__ = ("provider", "user_id")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    provider: str
    user_id: str
    def __init__(self, provider: _Optional[str] = ..., user_id: _Optional[str] = ...) -> None: ...

class RevokeConnectionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SigningKey(_message.Message):
    __slots__ = ("kid", "algorithm", "public_jwk", "state", "created_at", "created_by")
    KID_FIELD_NUMBER: _ClassVar[int]
    ALGORITHM_FIELD_NUMBER: _ClassVar[int]
    PUBLIC_JWK_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    CREATED_BY_FIELD_NUMBER: _ClassVar[int]
    kid: str
    algorithm: str
    public_jwk: str
    state: SigningKeyState
    created_at: _timestamp_pb2.Timestamp
    created_by: str
    def __init__(self, kid: _Optional[str] = ..., algorithm: _Optional[str] = ..., public_jwk: _Optional[str] = ..., state: _Optional[_Union[SigningKeyState, str]] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., created_by: _Optional[str] = ...) -> None: ...

class AddSigningKeyRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AddSigningKeyResponse(_message.Message):
    __slots__ = ("key",)
    KEY_FIELD_NUMBER: _ClassVar[int]
    key: SigningKey
    def __init__(self, key: _Optional[_Union[SigningKey, _Mapping]] = ...) -> None: ...

class RetireSigningKeyRequest(_message.Message):
    __slots__ = ("kid",)
    KID_FIELD_NUMBER: _ClassVar[int]
    kid: str
    def __init__(self, kid: _Optional[str] = ...) -> None: ...

class RetireSigningKeyResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListSigningKeysRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListSigningKeysResponse(_message.Message):
    __slots__ = ("keys",)
    KEYS_FIELD_NUMBER: _ClassVar[int]
    keys: _containers.RepeatedCompositeFieldContainer[SigningKey]
    def __init__(self, keys: _Optional[_Iterable[_Union[SigningKey, _Mapping]]] = ...) -> None: ...

class IssueTokenRequest(_message.Message):
    __slots__ = ("agent_id", "user_id", "roles", "ttl_seconds")
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    TTL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    agent_id: str
    user_id: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    ttl_seconds: int
    def __init__(self, agent_id: _Optional[str] = ..., user_id: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ..., ttl_seconds: _Optional[int] = ...) -> None: ...

class IssueTokenResponse(_message.Message):
    __slots__ = ("token", "expires_at")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    token: str
    expires_at: _timestamp_pb2.Timestamp
    def __init__(self, token: _Optional[str] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class SecretNeed(_message.Message):
    __slots__ = ("name", "oauth")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OAUTH_FIELD_NUMBER: _ClassVar[int]
    name: str
    oauth: bool
    def __init__(self, name: _Optional[str] = ..., oauth: bool = ...) -> None: ...

class ResolveSecretsRequest(_message.Message):
    __slots__ = ("tool", "runtime", "agent_id", "user_id", "roles", "needs")
    TOOL_FIELD_NUMBER: _ClassVar[int]
    RUNTIME_FIELD_NUMBER: _ClassVar[int]
    AGENT_ID_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    ROLES_FIELD_NUMBER: _ClassVar[int]
    NEEDS_FIELD_NUMBER: _ClassVar[int]
    tool: str
    runtime: str
    agent_id: str
    user_id: str
    roles: _containers.RepeatedScalarFieldContainer[str]
    needs: _containers.RepeatedCompositeFieldContainer[SecretNeed]
    def __init__(self, tool: _Optional[str] = ..., runtime: _Optional[str] = ..., agent_id: _Optional[str] = ..., user_id: _Optional[str] = ..., roles: _Optional[_Iterable[str]] = ..., needs: _Optional[_Iterable[_Union[SecretNeed, _Mapping]]] = ...) -> None: ...

class ResolvedSecret(_message.Message):
    __slots__ = ("value", "source", "version", "expires_at")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    value: str
    source: str
    version: int
    expires_at: _timestamp_pb2.Timestamp
    def __init__(self, value: _Optional[str] = ..., source: _Optional[str] = ..., version: _Optional[int] = ..., expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class ResolveSecretsResponse(_message.Message):
    __slots__ = ("secrets",)
    SECRETS_FIELD_NUMBER: _ClassVar[int]
    secrets: _containers.RepeatedCompositeFieldContainer[ResolvedSecret]
    def __init__(self, secrets: _Optional[_Iterable[_Union[ResolvedSecret, _Mapping]]] = ...) -> None: ...

class ConnectLinkRequest(_message.Message):
    __slots__ = ("provider", "user_id")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    USER_ID_FIELD_NUMBER: _ClassVar[int]
    provider: str
    user_id: str
    def __init__(self, provider: _Optional[str] = ..., user_id: _Optional[str] = ...) -> None: ...
