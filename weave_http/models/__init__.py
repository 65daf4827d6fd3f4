"""The wire shapes of the API as pydantic models (one module per route group), and how a
response is written.

The models are the single source of the OpenAPI schemas (``weave_http.openapi``) and of
every JSON response body. Bodies are written with
:func:`weave_core.foundation.exactjson.dumps`, so numbers inside documents stay exact
(``1e400``, ``2**64``); datetimes are RFC 3339 UTC with microseconds and ``Z``
(``2025-01-31T12:00:00.000000Z``).
"""

from __future__ import annotations

from pydantic import BaseModel

from weave_http.models.base import (
    JSON_MEDIA_TYPE,
    AnyJson,
    ApiModel,
    JsonObject,
    UtcDatetime,
    json_response,
    rfc3339,
)
from weave_http.models.controls import (
    ControlRequestModel,
    ReviewRequestModel,
    ReviewResponse,
)
from weave_http.models.definitions import (
    DefinitionDocument,
    DefinitionList,
    DefinitionSummary,
    DefinitionVersion,
    DefinitionVersions,
    PublishResponse,
    VersionSummary,
)
from weave_http.models.health import (
    HealthResponse,
)
from weave_http.models.problems import (
    ProblemDetails,
    ProblemItem,
)
from weave_http.models.signals import (
    SignalList,
    SignalModel,
    SignalRequest,
)
from weave_http.models.task_records import (
    AttemptList,
    AttemptModel,
    TaskEventList,
    TaskEventModel,
)
from weave_http.models.tasks import (
    CancelTaskRequest,
    ClaimedTaskModel,
    ClaimNext,
    ClaimRequest,
    ClaimResponse,
    CompleteRequest,
    CompleteResponse,
    CreateTaskRequest,
    HandlerDecl,
    HeartbeatRequest,
    HeartbeatResponse,
    QueueCapacityRequest,
    QueueDetail,
    QueueModel,
    QueueWorker,
    QuotaModel,
    QuotaRequest,
    SeenHandler,
    SeenHandlerList,
    TaskErrorModel,
    TaskModel,
)
from weave_http.models.workflows import (
    StartWorkflowRequest,
    WorkflowDetail,
    WorkflowHistory,
    WorkflowList,
    WorkflowModel,
    WorkflowResult,
)

RESPONSE_MODELS: tuple[type[BaseModel], ...] = (
    SeenHandlerList,
    ReviewResponse,
    WorkflowModel,
    WorkflowDetail,
    WorkflowList,
    WorkflowHistory,
    WorkflowResult,
    HealthResponse,
    DefinitionVersion,
    PublishResponse,
    DefinitionList,
    DefinitionVersions,
    ProblemDetails,
    ClaimResponse,
    HeartbeatResponse,
    CompleteResponse,
    TaskModel,
    QueueModel,
    QueueDetail,
    QuotaModel,
    SignalModel,
    SignalList,
    AttemptList,
    TaskEventList,
)
REQUEST_MODELS: tuple[type[BaseModel], ...] = (
    ControlRequestModel,
    ReviewRequestModel,
    StartWorkflowRequest,
    DefinitionDocument,
    ClaimRequest,
    HeartbeatRequest,
    CompleteRequest,
    CreateTaskRequest,
    CancelTaskRequest,
    QueueCapacityRequest,
    QuotaRequest,
    SignalRequest,
)

__all__ = [
    "JSON_MEDIA_TYPE",
    "REQUEST_MODELS",
    "RESPONSE_MODELS",
    "AnyJson",
    "ApiModel",
    "AttemptList",
    "AttemptModel",
    "CancelTaskRequest",
    "ClaimNext",
    "ClaimRequest",
    "ClaimResponse",
    "ClaimedTaskModel",
    "CompleteRequest",
    "CompleteResponse",
    "ControlRequestModel",
    "CreateTaskRequest",
    "DefinitionDocument",
    "DefinitionList",
    "DefinitionSummary",
    "DefinitionVersion",
    "DefinitionVersions",
    "HandlerDecl",
    "HealthResponse",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "JsonObject",
    "ProblemDetails",
    "ProblemItem",
    "PublishResponse",
    "QueueCapacityRequest",
    "QueueDetail",
    "QueueModel",
    "QueueWorker",
    "QuotaModel",
    "QuotaRequest",
    "ReviewRequestModel",
    "ReviewResponse",
    "SeenHandler",
    "SeenHandlerList",
    "SignalList",
    "SignalModel",
    "SignalRequest",
    "StartWorkflowRequest",
    "TaskErrorModel",
    "TaskEventList",
    "TaskEventModel",
    "TaskModel",
    "UtcDatetime",
    "VersionSummary",
    "WorkflowDetail",
    "WorkflowHistory",
    "WorkflowList",
    "WorkflowModel",
    "WorkflowResult",
    "json_response",
    "rfc3339",
]
