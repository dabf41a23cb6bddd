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
