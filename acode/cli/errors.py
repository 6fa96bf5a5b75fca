"""Errors the CLI reports, and the exit code each class of error ends the process with.

The exit codes are part of the CLI's contract for scripts (documented in ``docs/cli.md``):
an ACODE error code from the server maps to a class, and the class to an exit code.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class ExitCode(IntEnum):
    """Process exit codes, one per class of error."""

    OK = 0
    OTHER = 1
    USAGE = 2
    NOT_FOUND = 3
    REFUSED = 4
    AUTH = 5
    UNREACHABLE = 6
    JOB_FAILED = 7
    AUDIT_BROKEN = 8
    INTERRUPTED = 130


# ACODE codes whose class is not obvious from the HTTP status alone. Everything else
# falls back to the status: 400 usage, 401/403 auth, 404 not found, 409/422 refused.
_CODE_CLASSES: dict[str, ExitCode] = {
    "ACODE-ROL-003": ExitCode.AUTH,
    "ACODE-SES-002": ExitCode.USAGE,  # a workspace path not allowed is a 403 on the wire
    "ACODE-PRM-002": ExitCode.NOT_FOUND,
}
_STATUS_CLASSES: dict[int, ExitCode] = {
    400: ExitCode.USAGE,
    401: ExitCode.AUTH,
    403: ExitCode.AUTH,
    404: ExitCode.NOT_FOUND,
    409: ExitCode.REFUSED,
    422: ExitCode.REFUSED,
    503: ExitCode.UNREACHABLE,  # the server answers, but its database or broker does not
}


def exit_code_for(code: str, http_status: int) -> ExitCode:
    """The exit code for a server error, from its ACODE code or else its HTTP status."""
    if code in _CODE_CLASSES:
        return _CODE_CLASSES[code]
    return _STATUS_CLASSES.get(http_status, ExitCode.OTHER)


class CliError(Exception):
    """An error the CLI explains to the user and ends with a given exit code."""

    exit_code: ExitCode = ExitCode.OTHER
    default_title = "Error"

    def __init__(
        self,
        message: str,
        *,
        title: str = "",
        suggestion: str = "",
        exit_code: ExitCode | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.title = title or self.default_title
        self.suggestion = suggestion
        if exit_code is not None:
            self.exit_code = exit_code

    def as_dict(self) -> dict[str, Any]:
        """The error as JSON for ``--json`` callers (same shape as the API's error body)."""
        return {
            "code": "",
            "message": self.message,
            "details": {"suggestion": self.suggestion} if self.suggestion else {},
            "exit_code": int(self.exit_code),
        }


class UsageError(CliError):
    """The command line itself is wrong or incomplete (no session selected, bad flags)."""

    exit_code = ExitCode.USAGE
    default_title = "Invalid command"


class NotFound(CliError):
    """Something named on the command line does not exist (a session id prefix)."""

    exit_code = ExitCode.NOT_FOUND
    default_title = "Not found"


class ServerUnreachable(CliError):
    """The server did not answer: connection refused, DNS failure, timeout."""

    exit_code = ExitCode.UNREACHABLE
    default_title = "Server unreachable"


class ApiError(CliError):
    """The server answered with an error body ``{"code", "message", "details"}``."""

    def __init__(
        self,
        *,
        code: str,
        message: str,
        details: dict[str, Any] | None,
        http_status: int,
        method: str,
        url: str,
        suggestion: str = "",
        endpoint_missing: bool = False,
    ) -> None:
        super().__init__(message, suggestion=suggestion, exit_code=exit_code_for(code, http_status))
        self.code = code
        self.details: dict[str, Any] = details or {}
        self.http_status = http_status
        self.method = method
        self.url = url
        # True when the route itself does not exist (an HTML 404, not an API answer),
        # which usually means the server is older than this CLI.
        self.endpoint_missing = endpoint_missing

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "details": self.details,
            "http_status": self.http_status,
            "exit_code": int(self.exit_code),
        }
