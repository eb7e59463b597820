"""POST a request body the provider built itself through an SDK client, for a raw event stream.

The SDKs' ``create`` methods walk every argument through their ``maybe_transform`` (aliases,
dates, files: a recursive pass over the type hints of every parameter, message and tool schema),
then serialise the result with the standard library's ``json``. ``build_params`` here already
returns the wire JSON, so the transform has nothing to change (``tests/providers/test_request_body.py``
compares what is sent with what the SDK's own ``create`` sends). :func:`open_stream` therefore
serialises the body once (orjson) and hands the bytes to the client's ``post`` with ``content=``,
the SDKs' documented way to send a body of one's own. Everything else stays the SDK's: URL,
headers, auth, timeouts, the HTTP error mapping. The response comes back unread, as
``with_raw_response`` gives it (the same request header asks for it), and the caller reads the
event stream itself (``providers._sse``).

What it saves of the CPU spent opening each stream on the event loop is in ``benchmarks/README.md``
("Figures moved out of docstrings").

**The request made once per client** (``AsyncOpenAI`` and ``AsyncAnthropic``, the one seam that
leans on the SDKs' internals): for every request the SDK builds its options model, merges its
headers, parses and merges the URL and has its HTTP client (``httpx``; ``httpx2`` for Anthropic's)
build the request again, all of it the same each time but the body (about a fifth of a short
turn's CPU: ``benchmarks/README.md``, "A short turn's fixed cost, third round"; for Anthropic's
SDK half a short model call's instructions, "A turn's request kept for Anthropic"). So once a
client has sent a request the plain way (``post``: its platform headers are known then), the
request the SDK builds for the same path and options is kept as a template
(``_Template``: built by the SDK's own ``_build_request``, so URL, query, headers and auth are the
SDK's), and later requests are that template with the new body, sent through the client's HTTP
client as the SDK sends them, with the SDK's error mapping (the timeout and connection errors its
``request`` raises, the status errors of ``_make_status_error_from_response``). Only a client for
which the SDK does nothing per request beyond that takes this way (``_sdk_of``, one ``_Sdk`` per
SDK): exactly ``openai.AsyncOpenAI`` or ``anthropic.AsyncAnthropic``, SDK retries off, no custom
auth and an HTTP client of the SDK's own ``AsyncClient`` class; for OpenAI no key provider,
workload identity, provider runtime or idempotency header; for Anthropic no credentials provider
(its ``custom_auth``), middleware, idempotency header or client-wide custom headers
(``default_headers``, ``ANTHROPIC_CUSTOM_HEADERS``, a profile's); Anthropic's OpenTelemetry spans
are made for its methods' calls, not for a ``post`` of one's own, which has no span name (a
request whose options had one would not be kept). The HTTP client's cookies are added to each
request as ``build_request`` adds them (e.g. a CDN's). Every other client, or a client whose key,
base URL or timeout changed since (for Anthropic also its auth token: the same objects or not),
goes the plain way (``post``), and ``AGENT_HOST_REQUEST_TEMPLATES=0`` turns it off.
``tests/providers/test_request_body.py`` (OpenAI) and ``test_request_body_anthropic.py`` check that
both ways put the same bytes on the wire and raise the same errors, and the plain way for the
clients not covered.

**Cookies read only from a response that sets one** (the same seam, the same clients): ``httpx``
hands every response to its client's cookie jar (``Cookies.extract_cookies``), which wraps the
request and the response for the standard library's ``CookieJar`` (a copy of every header, an
``email`` message built twice) to find, nearly always, that the response sets no cookie, when the
jar does nothing (``CookieJar.make_cookies`` returns at once without a ``Set-Cookie`` or
``Set-Cookie2`` header). A client that takes the kept way gets, once, a ``Cookies`` of the same jar
whose ``extract_cookies`` looks at the response's header names first and hands a response that
sets a cookie to httpx's own (``_lean_cookies``): the same jar, the same cookies sent next. A
client whose cookies are anything but a plain ``Cookies`` of its HTTP library with its ``jar`` (set
again by its owner, a subclass) is left as it is: every response read the plain way.

A stream whose reads the provider's stall watch bounds (``providers._streaming``: ``stall_timeout``)
is sent with :func:`unbounded_reads` of the client's timeout: no per-read bound in the HTTP client.
The aiohttp transport the SDKs use arms a timer for that bound on every chunk it receives (a timer
handle and a context made, the last one cancelled and left in the loop's heap: instructions a chunk
and two of the young containers every garbage collection walks per streaming session, in
``benchmarks/README.md``, "Event-loop stalls: the provider layer and the collector"); the watch is
one timer per stream. The SDK's ``X-Stainless-Read-Timeout`` header then says the watch's bound.
"""

from __future__ import annotations

import operator
import os
import weakref
from typing import Any

import orjson

__all__ = ["RAW_RESPONSE_HEADER", "READ_TIMEOUT_HEADER", "TEMPLATES_VARIABLE", "open_stream", "unbounded_reads"]

TEMPLATES_VARIABLE = "AGENT_HOST_REQUEST_TEMPLATES"
"""``0`` sends every request through the SDK's ``post`` (no request kept per client)."""

RAW_RESPONSE_HEADER = "X-Stainless-Raw-Response"
"""What ``with_raw_response`` sets to get the response unparsed (both SDKs' ``RAW_RESPONSE_HEADER``;
a test checks they still agree)."""

READ_TIMEOUT_HEADER = "X-Stainless-Read-Timeout"
"""Where both SDKs tell the server how long the client waits for each read (set from the client's
timeout, left out when it has no read bound)."""


def unbounded_reads(timeout_type: type, timeout: Any) -> Any:
    """``timeout`` (the SDK client's: a number, None or a ``timeout_type``) with no bound on each
    read: ``timeout_type`` is the SDK's ``Timeout`` (``openai.Timeout``, ``anthropic.Timeout``)."""
    whole: Any = timeout if isinstance(timeout, timeout_type) else timeout_type(timeout)
    return timeout_type(connect=whole.connect, read=None, write=whole.write, pool=whole.pool)


async def open_stream(client: Any, path: str, params: dict[str, Any], options: dict[str, Any] | None = None) -> Any:
    """POST ``params`` with ``"stream": true`` to ``path`` through ``client`` (an ``AsyncOpenAI``
    or ``AsyncAnthropic``); the raw response (``.http_response`` of the SDK's raw-response
    wrapper), its body not read yet. ``options``: the SDK's request options to add (``timeout``,
    ``headers``). SDK errors (status codes, connection) are raised as the SDK raises them."""
    sent: dict[str, Any] = {"headers": {RAW_RESPONSE_HEADER: "true"}}
    if options:
        sent = {**options, "headers": {**options.get("headers", {}), RAW_RESPONSE_HEADER: "true"}}
    content = orjson.dumps({**params, "stream": True})
    kept = _templates.get(client) if _enabled else None
    key = _key(path, sent) if _enabled else None
    if kept is not None and key is not None:
        template = kept.get(key)
        if template is not None and template.fits(client):
            return await template.send(client, content)
    raw = await client.post(
        path,
        cast_to=object,  # never parsed: the raw response is asked for
        content=content,
        options=sent,
        stream=True,
    )
    if key is not None:
        await _keep(client, path, sent, key)
    return raw.http_response


# -- the request made once per client (see the module docstring) ----------------------------------

_enabled = os.environ.get(TEMPLATES_VARIABLE, "1") != "0"

_templates: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], _Template]] = weakref.WeakKeyDictionary()
"""Per client, its templates by ``_key``."""

_HELD = 16
"""Templates kept per client (paths times options; a provider uses one or two)."""

_UNSENT = frozenset({"content-length", "transfer-encoding", "cookie"})
"""The template's headers that describe its (empty) body or the cookies the client held then, not
the request: set again per request."""


def _key(path: str, sent: dict[str, Any]) -> tuple[Any, ...] | None:
    """What makes two requests to the same client the same request but for their bodies: the
    path and the options (``timeout`` and ``headers`` only; anything else: None, never kept)."""
    if sent.keys() - {"timeout", "headers"}:
        return None
    timeout = sent.get("timeout")
    if timeout is not None and not isinstance(timeout, (int, float)):
        try:
            timeout = (type(timeout), timeout.connect, timeout.read, timeout.write, timeout.pool)
        except AttributeError:
            return None
    headers = sent.get("headers") or {}
    if not all(isinstance(value, str) for value in headers.values()):
        return None  # e.g. the SDK's ``Omit``
    return path, timeout, tuple(sorted(headers.items()))


class _Sdk:
    """What the kept way needs of one SDK: whether a client of it is plain (``plain``), what of a
    client its kept requests depend on (``state``), how it builds a first attempt (``build``) and
    how it maps a failed send (``failed``), with its HTTP library (``http``)."""

    __slots__ = ("build", "failed", "http", "plain", "state")

    def __init__(self, http: Any, plain: Any, state: Any, build: Any, failed: Any) -> None:
        self.http = http
        self.plain = plain
        self.state = state
        self.build = build
        self.failed = failed


def _openai() -> _Sdk:
    import httpx
    import openai
    from openai._models import FinalRequestOptions

    def plain(client: Any) -> bool:
        return (type(client) is openai.AsyncOpenAI and client.max_retries == 0 and client.custom_auth is None
                and getattr(client, "_provider_runtime", None) is None and getattr(client, "_api_key_provider", None) is None
                and getattr(client, "_workload_identity_auth", None) is None and not getattr(client, "_idempotency_header", None)
                and isinstance(client.api_key, str) and getattr(client, "_platform", None) is not None
                and isinstance(client._client, httpx.AsyncClient))

    async def build(client: Any, path: str, sent: dict[str, Any]) -> Any:
        options = FinalRequestOptions.construct(method="post", url=path, json_data=None, content=b"", **sent)
        options = await client._prepare_options(options)
        request = client._build_request(options, retries_taken=0)
        await client._prepare_request(request)
        return request

    def failed(client: Any, request: Any, error: Exception) -> BaseException:
        if isinstance(error, httpx.TimeoutException):
            return openai.APITimeoutError(request=request)
        if isinstance(error, openai.OpenAIError):
            return error
        return openai.APIConnectionError(request=request)

    return _Sdk(httpx, plain, lambda client: (client.api_key, client.base_url, client.timeout), build, failed)


def _anthropic() -> _Sdk:
    import anthropic
    import httpx2
    from anthropic._models import FinalRequestOptions

    def plain(client: Any) -> bool:
        return (type(client) is anthropic.AsyncAnthropic and client.max_retries == 0 and client.custom_auth is None
                and not client._middleware and not client._idempotency_header
                and not client._custom_headers and not client._credential_headers
                and (isinstance(client.api_key, str) or isinstance(client.auth_token, str))
                and client._platform is not None and isinstance(client._client, httpx2.AsyncClient))

    async def build(client: Any, path: str, sent: dict[str, Any]) -> Any:
        # As the SDK's ``request`` builds a first attempt (``_copy_and_prepare``, then
        # ``_attempt_request``'s steps); the idempotency key it makes goes in no header here.
        options = FinalRequestOptions.construct(method="post", url=path, json_data=None, content=b"", **sent)
        if options.span_name is not None:  # a traced call (OpenTelemetry): its attempts carry trace headers
            raise ValueError("a traced request")
        options = await client._copy_and_prepare(options)
        options = await client._prepare_options(options)
        request = client._build_request(options, retries_taken=0)
        await client._prepare_request(request)
        return request

    def failed(client: Any, request: Any, error: Exception) -> BaseException:
        if isinstance(error, httpx2.TimeoutException):
            return client._transport_error(client._make_timeout_error(request, error), None)
        if isinstance(error, anthropic.AnthropicError):
            return error
        return client._transport_error(client._make_connection_error(request, error), None)

    return _Sdk(httpx2, plain, lambda client: (client.api_key, client.auth_token, client.base_url, client.timeout),
                build, failed)


_SDKS = {"openai": _openai, "anthropic": _anthropic}
"""Each SDK the kept way knows, by the top-level module of its client's class."""

_sdks: dict[str, _Sdk | None] = {}


def _sdk_of(client: Any) -> _Sdk | None:
    """``client``'s SDK if the SDK does nothing per request for it beyond building it from the same
    options (see the module docstring), else None."""
    name = type(client).__module__.partition(".")[0]
    if name not in _sdks:
        make = _SDKS.get(name)
        try:
            _sdks[name] = make() if make is not None else None
        except Exception:  # an SDK whose internals moved: the plain way
            _sdks[name] = None
    sdk = _sdks[name]
    try:
        return sdk if sdk is not None and sdk.plain(client) else None
    except Exception:  # an SDK whose internals moved: the plain way
        return None


async def _keep(client: Any, path: str, sent: dict[str, Any], key: tuple[Any, ...]) -> None:
    """Build and keep ``client``'s template for ``path`` with ``sent`` (as the SDK's ``request``
    builds a first attempt), if its SDK allows (``_sdk_of``); nothing is kept if the SDK cannot
    build it."""
    sdk = _sdk_of(client)
    if sdk is None:
        return
    try:
        request = await sdk.build(client, path, sent)
    except Exception:  # internals moved: this client keeps the plain way
        return
    kept = _templates.setdefault(client, {})
    if len(kept) >= _HELD:
        kept.clear()
    kept[key] = _Template(sdk, client, request)


class _Template:
    """One request of one client, to be sent again with another body (``send``)."""

    __slots__ = ("extensions", "headers", "method", "sdk", "state", "url")

    def __init__(self, sdk: _Sdk, client: Any, request: Any) -> None:
        self.sdk = sdk
        self.state = sdk.state(client)
        self.method = request.method
        self.url = request.url
        self.headers = sdk.http.Headers([(name, value) for name, value in request.headers.multi_items()
                                         if name.lower() not in _UNSENT])
        self.extensions = request.extensions

    def fits(self, client: Any) -> bool:
        """Still what the SDK would build: what the request depends on of the client is what it
        was (its key, base URL, timeout: the same objects)."""
        return all(map(operator.is_, self.sdk.state(client), self.state))  # (the same SDK: tuples of one length)

    async def send(self, client: Any, content: bytes) -> Any:
        """The template with ``content`` as its body, sent and checked as the SDK's ``request``
        does (no retries: the client has none); the response, its body not read."""
        http_library = self.sdk.http
        http = client._client
        cookies = http.cookies
        if type(cookies) is http_library.Cookies:  # (a new client, or its owner set its cookies again)
            _lean_cookies(http, http_library.Cookies)
        request = http_library.Request(self.method, self.url, headers=self.headers, content=content,
                                       cookies=cookies if cookies else None, extensions=dict(self.extensions))
        try:
            response = await http.send(request, stream=True)
        except Exception as error:
            failure = self.sdk.failed(client, request, error)
            if failure is error:
                raise
            raise failure from error
        if not response.is_success:
            if not response.is_closed:
                await response.aread()
            raise client._make_status_error_from_response(response) from None
        return response


_lean: dict[Any, Any] = {}
"""Per HTTP library's ``Cookies`` class, its subclass whose ``extract_cookies`` reads only a
response that sets a cookie (made on first use)."""

_SETS_COOKIE = (b"set-cookie", b"set-cookie2")
"""The response headers the standard library's ``CookieJar.make_cookies`` reads (and nothing else)."""


def _lean_cookies(http: Any, plain: Any) -> None:
    """Give ``http`` (an ``AsyncClient`` whose cookies are a ``plain``, its library's ``Cookies``)
    cookies of the same jar that skip a response setting none (see the module docstring); anything
    else is left as it is."""
    try:
        cookies = http._cookies
        jar = cookies.jar
    except AttributeError:  # internals moved: every response read the plain way
        return
    if type(cookies) is not plain:
        return
    lean_type = _lean.get(plain)
    if lean_type is None:

        class Lean(plain):  # the library's Cookies (httpx or httpx2), known at run time
            def extract_cookies(self, response: Any) -> None:
                for name, _ in response.headers.raw:
                    if name.lower() in _SETS_COOKIE:
                        super().extract_cookies(response)
                        return

        lean_type = _lean[plain] = Lean
    lean = lean_type.__new__(lean_type)
    lean.jar = jar
    http._cookies = lean
