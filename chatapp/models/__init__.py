from chatapp.models.api_keys import ApiAuthFailure, ApiKey
from chatapp.models.audit import AuditEvent as AuditEvent
from chatapp.models.blob import Blob
from chatapp.models.calibration import TokenCalibration
from chatapp.models.conversation import Conversation, Message
from chatapp.models.files import ShareLink, Upload
from chatapp.models.links import ToolLink
from chatapp.models.mcp_oauth import McpOAuthGrant
from chatapp.models.mcp_server import McpServer
from chatapp.models.policy import ToolPolicy
from chatapp.models.preferences import UserPreference
from chatapp.models.pricing import ModelPrice
from chatapp.models.provider import ProviderConfig
from chatapp.models.quotas import Quota
from chatapp.models.run import ACTIVE_STATUSES, TERMINAL_STATUSES, Approval, Round, Run, RunEvent, ToolCall
from chatapp.models.worker import WorkerBeat

__all__ = [
    "ApiAuthFailure",
    "ApiKey",
    "ACTIVE_STATUSES",
    "TERMINAL_STATUSES",
    "Approval",
    "Blob",
    "Conversation",
    "McpOAuthGrant",
    "McpServer",
    "Message",
    "ModelPrice",
    "ProviderConfig",
    "Quota",
    "Round",
    "Run",
    "RunEvent",
    "ShareLink",
    "ToolCall",
    "ToolLink",
    "TokenCalibration",
    "ToolPolicy",
    "Upload",
    "UserPreference",
    "WorkerBeat",
]
