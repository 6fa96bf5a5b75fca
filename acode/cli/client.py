"""A small HTTP client for the acode REST API that turns every failure into a CliError."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx

from acode.cli.config import Settings
from acode.cli.errors import ApiError, CliError, ServerUnreachable, UsageError

USER_AGENT = "acode-cli/0.1"
TIMEOUT = httpx.Timeout(30.0, connect=5.0)

Params = Mapping[str, str | int | None]


class ApiClient:
    """Calls the API at ``settings.url`` with the configured token.

    Methods return decoded JSON (or text) and raise :class:`ApiError` for error answers
    and :class:`ServerUnreachable` when there is no answer at all.
    """

    def __init__(self, settings: Settings, *, timeout: httpx.Timeout = TIMEOUT) -> None:
        self.settings = settings
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if settings.token:
            headers["Authorization"] = f"Token {settings.token}"
        self._http = httpx.Client(base_url=settings.url, headers=headers, timeout=timeout)

    def close(self) -> None:
        """Release the connection pool."""
        self._http.close()

    def __enter__(self) -> ApiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- calls -------------------------------------------------------------------------
    def get(self, path: str, params: Params | None = None) -> Any:
        """GET a JSON resource."""
        return self._json(self._send("GET", path, params=params))

    def get_with_headers(
        self, path: str, params: Params | None = None
    ) -> tuple[Any, httpx.Headers]:
        """GET a JSON resource, with the answer's headers (a digest that comes with it)."""
        response = self._send("GET", path, params=params)
        return self._json(response), response.headers

    def get_text(self, path: str, params: Params | None = None) -> str:
        """GET a text resource (YAML export, CSV)."""
        return self._send("GET", path, params=params).text

    def post(
        self,
        path: str,
        body: Any = None,
        *,
        params: Params | None = None,
        content: str | None = None,
        content_type: str = "application/json",
    ) -> Any:
        """POST JSON (or raw ``content``) and return the decoded JSON answer."""
        response = self._send(
            "POST", path, params=params, json=body, content=content, content_type=content_type
        )
        return self._json(response) if response.content else None

    def put(self, path: str, body: Any) -> Any:
        """PUT JSON (replace a resource, such as a session's plan) and return the answer."""
        return self._json(self._send("PUT", path, json=body))

    def patch(self, path: str, body: Any) -> Any:
        """PATCH JSON (change part of a resource, such as one plan step's status)."""
        return self._json(self._send("PATCH", path, json=body))

    def delete(self, path: str) -> None:
        """DELETE a resource."""
        self._send("DELETE", path)

    @contextmanager
    def stream(self, path: str, params: Params | None = None) -> Iterator[httpx.Response]:
        """GET a large body (audit export) as a stream, raising the same errors."""
        url = self._url(path)
        try:
            with self._http.stream("GET", url, params=_clean(params)) as response:
                if response.status_code >= 400:
                    response.read()
                    raise self._error(response)
                yield response
        except httpx.TransportError as exc:
            raise self._unreachable("GET", url, exc) from exc

    # -- plumbing ----------------------------------------------------------------------
    def _json(self, response: httpx.Response) -> Any:
        try:
            return response.json()
        except ValueError as exc:
            # A 200 that is not JSON: ACODE_URL points at some other web server.
            raise CliError(
                f"{response.request.method} {response.request.url} answered with something "
                "that is not JSON.",
                title="Not an acode API answer",
                suggestion=f"Check that {self.settings.url} is an acode server (ACODE_URL).",
            ) from exc

    def _url(self, path: str) -> str:
        # Absolute URLs come from the API itself (pagination links); pass them through.
        if path.startswith(("http://", "https://", "/")):
            return path
        return "/" + path

    def _send(
        self,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        json: Any = None,
        content: str | None = None,
        content_type: str = "application/json",
    ) -> httpx.Response:
        url = self._url(path)
        try:
            if content is not None:
                response = self._http.request(
                    method,
                    url,
                    params=_clean(params),
                    content=content.encode("utf-8"),
                    headers={"Content-Type": content_type},
                )
            else:
                response = self._http.request(method, url, params=_clean(params), json=json)
        except httpx.UnsupportedProtocol as exc:
            raise UsageError(
                f"The server URL {self.settings.url!r} is not an http(s) URL.",
                suggestion="Set ACODE_URL to e.g. http://127.0.0.1:8000.",
            ) from exc
        except httpx.TransportError as exc:
            raise self._unreachable(method, url, exc) from exc
        if response.status_code >= 400:
            raise self._error(response)
        return response

    def _unreachable(self, method: str, path: str, exc: Exception) -> ServerUnreachable:
        where = self.settings.url
        if self.settings.url_source == "default":
            suggestion = (
                f"Is `make run` running? It serves on {where}. For another server set "
                "ACODE_URL or run `acode login --url URL`."
            )
        else:
            suggestion = (
                f"Check that the acode server at {where} is up (the URL came from "
                f"{self.settings.url_source}); for a local server run `make run`, or set "
                "ACODE_URL to the right address."
            )
        reason = str(exc) or type(exc).__name__
        return ServerUnreachable(
            f"{method} {where}{path} failed: {reason}",
            title=f"Cannot reach the acode server at {where}",
            suggestion=suggestion,
        )

    def _error(self, response: httpx.Response) -> ApiError:
        method = response.request.method
        url = str(response.request.url)
        body: Any = None
        try:
            body = response.json()
        except ValueError:
            body = None
        if isinstance(body, dict) and isinstance(body.get("code"), str):
            details = body.get("details")
            return ApiError(
                code=body["code"],
                message=str(body.get("message") or ""),
                details=details if isinstance(details, dict) else {"value": details},
                http_status=response.status_code,
                method=method,
                url=url,
                suggestion=self._auth_suggestion() if response.status_code == 401 else "",
            )
        # Not an API error body: a route this server does not have, or a proxy page.
        status = response.status_code
        if status == 404:
            return ApiError(
                code="ACODE-API-404",
                message=f"{method} {response.request.url.path} does not exist on the server at "
                f"{self.settings.url}.",
                details={},
                http_status=status,
                method=method,
                url=url,
                suggestion="The server may be older than this CLI, or ACODE_URL may point at "
                "something that is not an acode server.",
                endpoint_missing=True,
            )
        return ApiError(
            code=f"ACODE-API-{status}",
            message=f"{method} {url} answered {status} {response.reason_phrase}.",
            details={},
            http_status=status,
            method=method,
            url=url,
        )

    def _auth_suggestion(self) -> str:
        source = self.settings.token_source
        if source == "ACODE_TOKEN":
            return (
                "The server refused the token in ACODE_TOKEN. Check it, or unset ACODE_TOKEN "
                "and run `acode login`."
            )
        if source == "login":
            return "The server refused this token; copy it again from the admin (Auth Token)."
        if source == "config":
            return f"The saved token for {self.settings.url} was refused. Run `acode login` again."
        return (
            f"You are not logged in to {self.settings.url}. Run `acode login` (or set ACODE_TOKEN)."
        )


def comma_list(text: str | None) -> str | None:
    """A comma-separated option as the API reads it: no spaces, no empty items
    (``"running, failed"`` is ``"running,failed"``)."""
    if text is None:
        return None
    return ",".join(item.strip() for item in text.split(",") if item.strip()) or None


def _clean(params: Params | None) -> dict[str, str | int] | None:
    """Drop unset query parameters so the server sees only what the user gave."""
    if not params:
        return None
    return {k: v for k, v in params.items() if v is not None and v != ""}
