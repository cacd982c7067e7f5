"""The audit trail: a tamper-evident hash chain of run events and exports (docs/audit.md).

``record`` appends (inside the caller's transaction), ``verify_chain`` walks the chain and names the
first broken link; ``chain`` defines the canonical form that is hashed; ``otel`` exports a run as
OpenTelemetry GenAI spans.
"""

from chatapp.audit.chain import GENESIS, canonical_json, row_hash
from chatapp.audit.log import SYSTEM, record
from chatapp.audit.verify import Break, Verification, verify_chain

__all__ = [
    "GENESIS",
    "SYSTEM",
    "Break",
    "Verification",
    "canonical_json",
    "record",
    "row_hash",
    "verify_chain",
]
