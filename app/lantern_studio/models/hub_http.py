"""Talking to the hub over HTTP: a file's metadata (HEAD) and its bytes (a streamed GET that resumes).

Why not ``hf_hub_download``: it names cache paths after the server's ETag and
commit headers (a hostile mirror could write outside the cache), removes a blob
named by the server when a check fails (another model's file), reads 10 MB per
step so progress and cancel waited for each, and logs to the terminal. Here the
transfer is streamed with httpx (the HTTP client the hub library itself uses),
and the caller decides where the bytes go.

Cancel within a fraction of a second whatever the server does: every socket read
waits in slices of :data:`POLL_S` and checks the cancel between them (a custom
network backend under httpx), so a stalled or dripping server is left at once.
Only connecting (TCP and TLS) waits its own timeout.
"""

from __future__ import annotations

import os
import re
import time
import urllib.parse
from dataclasses import dataclass
from typing import Callable, Optional

import httpcore2
import httpx2

from .hub_errors import (ConnectionDropped, DownloadCancelled, HubError, HubRefused, HubTimeout, HubUnavailable,
                         IntegrityError, shown)

POLL_S = 0.1  # how often a waiting read looks at the cancel
MAX_REDIRECTS = 10
RETRIES = 5  # resumes in a row that bring no new byte, before giving up
STALLS = 2  # resumes after the server went silent for the whole timeout, before giving up

Cancelled = Callable[[], bool]


def download_timeout() -> float:
    """Seconds a connection may stay silent: $HF_HUB_DOWNLOAD_TIMEOUT (the hub library's own setting), else 10."""
    try:
        value = float(os.environ.get("HF_HUB_DOWNLOAD_TIMEOUT", "") or 10.0)
    except ValueError:
        value = 10.0
    return value if 0 < value < 3600 else 10.0


# --------------------------------------------------------------------------- a cancellable socket


class _PollingStream(httpcore2.NetworkStream):
    """A network stream whose reads wait in short slices, checking the cancel between them."""

    def __init__(self, inner, cancelled: Cancelled):
        self._inner, self._cancelled = inner, cancelled

    def read(self, max_bytes: int, timeout: Optional[float] = None) -> bytes:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._cancelled():
                raise DownloadCancelled("download cancelled")
            wait = POLL_S if deadline is None else min(POLL_S, deadline - time.monotonic())
            if wait <= 0:
                raise httpcore2.ReadTimeout("timed out")
            try:
                return self._inner.read(max_bytes, timeout=wait)
            except httpcore2.ReadTimeout:
                continue

    def write(self, buffer: bytes, timeout: Optional[float] = None) -> None:
        if self._cancelled():
            raise DownloadCancelled("download cancelled")
        self._inner.write(buffer, timeout=timeout)

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context, server_hostname=None, timeout=None):
        return _PollingStream(self._inner.start_tls(ssl_context, server_hostname, timeout), self._cancelled)

    def get_extra_info(self, info: str):
        return self._inner.get_extra_info(info)


class _PollingBackend(httpcore2.NetworkBackend):
    def __init__(self, cancelled: Cancelled):
        self._inner, self._cancelled = httpcore2.SyncBackend(), cancelled

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        if self._cancelled():
            raise DownloadCancelled("download cancelled")
        return _PollingStream(self._inner.connect_tcp(host, port, timeout, local_address, socket_options),
                              self._cancelled)

    def connect_unix_socket(self, path, timeout=None, socket_options=None):
        return _PollingStream(self._inner.connect_unix_socket(path, timeout, socket_options), self._cancelled)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def client(cancelled: Cancelled = lambda: False, timeout: Optional[float] = None) -> httpx2.Client:
    """An httpx client (proxies from the environment, as the hub library) whose reads watch ``cancelled``."""
    t = download_timeout() if timeout is None else timeout
    try:
        c = httpx2.Client(timeout=httpx2.Timeout(t, connect=min(t, 10.0)), follow_redirects=False,
                          max_redirects=MAX_REDIRECTS, trust_env=True)
    except (ImportError, ValueError, httpx2.InvalidURL) as e:  # a SOCKS proxy without socksio, a bad proxy URL
        first = (str(e).strip().splitlines() or [""])[0][:160]
        raise HubUnavailable(f"the proxy set in the environment (HTTPS_PROXY / HTTP_PROXY / ALL_PROXY) cannot be "
                             f"used: {first}") from None
    backend = _PollingBackend(cancelled)
    for transport in [c._transport, *c._mounts.values()]:  # noqa: SLF001 - the one way in for a network backend
        pool = getattr(transport, "_pool", None)
        if pool is not None and hasattr(pool, "_network_backend"):
            pool._network_backend = backend
    return c


def _headers() -> dict:
    from huggingface_hub.utils import build_hf_headers  # noqa: PLC0415 - huggingface_hub: slow import

    h = dict(build_hf_headers())
    h["Accept-Encoding"] = "identity"  # the bytes as stored: their hash is checked
    return h


# --------------------------------------------------------------------------- errors


def endpoint_of(url: str) -> str:
    p = urllib.parse.urlsplit(url)
    return f"{p.scheme}://{p.netloc}"


def unreachable(url: str, cause: BaseException) -> HubUnavailable:
    e = HubUnavailable(
        f"could not reach the model hub ({endpoint_of(url)}: {type(cause).__name__}): check the network or set "
        "HF_ENDPOINT; offline mode uses only the local cache"
    )
    e.__cause__ = cause
    return e


def _transport_error(label: str, url: str, e: Exception) -> HubError:
    if isinstance(e, httpx2.TooManyRedirects):
        return HubRefused(f"{label}: the model hub redirected more than {MAX_REDIRECTS} times (a redirect loop); "
                          "refused")
    if isinstance(e, httpx2.ConnectTimeout):
        return HubTimeout(f"{label}: the model hub ({endpoint_of(url)}) did not accept a connection within "
                          f"{download_timeout():.0f} s (timed out): check the network or HF_ENDPOINT")
    if isinstance(e, (httpx2.ReadTimeout, httpx2.PoolTimeout, httpx2.WriteTimeout)):
        return HubTimeout(f"{label}: the model hub ({endpoint_of(url)}) sent nothing for "
                          f"{download_timeout():.0f} s (timed out); run the download again")
    if isinstance(e, (httpx2.RemoteProtocolError, httpx2.ReadError)):
        first = (str(e).strip().splitlines() or [""])[0][:100]
        return ConnectionDropped(f"{label}: the connection to the model hub ({endpoint_of(url)}) dropped "
                                 f"({type(e).__name__}: {first}); run the download again to resume")
    if isinstance(e, (httpx2.ConnectError, httpx2.NetworkError, httpx2.ProxyError)):
        return unreachable(url, e)
    first = (str(e).strip().splitlines() or [""])[0][:120]
    return HubRefused(f"{label}: the model hub's answer could not be used ({type(e).__name__}: {first})")


def _status_error(label: str, response) -> HubError:
    status = response.status_code
    code = response.headers.get("X-Error-Code", "")
    if status == 404 or code in ("RepoNotFound", "RevisionNotFound", "EntryNotFound"):
        return HubRefused(f"{label} was not found on the model hub at {endpoint_of(str(response.url))}")
    if status in (401, 403):
        return HubRefused(f"the model hub refused {label} (HTTP {status}): the repository is gated or private — "
                          "accept its terms on the hub and log in (hf auth login)")
    if status == 429 or status >= 500:
        return HubUnavailable(f"the model hub at {endpoint_of(str(response.url))} is unavailable for {label} "
                              f"(HTTP {status}); try again later")
    return HubRefused(f"the model hub refused {label} (HTTP {status})")


# --------------------------------------------------------------------------- HEAD


@dataclass(frozen=True)
class Metadata:
    """What the hub says about a file, as it said it (checked by the caller)."""

    size: Optional[str]
    etag: Optional[str]
    commit: Optional[str]


def head(url: str, label: str, timeout: float = 10.0) -> Metadata:
    """HEAD the file: X-Linked-Size / X-Linked-Etag (large files) or Content-Length / ETag, and X-Repo-Commit.
    Follows relative redirects only (a renamed repository); an absolute one (the storage) already carries them."""
    with client(timeout=timeout) as c:
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            try:
                r = c.head(current, headers=_headers())
            except httpx2.HTTPError as e:
                raise _transport_error(label, current, e) from None
            if 300 <= r.status_code < 400 and r.headers.get("Location", "").startswith("/") \
                    and not r.headers.get("Location", "").startswith("//"):
                current = urllib.parse.urljoin(current, r.headers["Location"])
                continue
            if r.status_code >= 400:
                raise _status_error(label, r)
            h = r.headers
            return Metadata(h.get("X-Linked-Size") or h.get("Content-Length"), h.get("X-Linked-Etag") or h.get("ETag"),
                            h.get("X-Repo-Commit"))
    raise _transport_error(label, url, httpx2.TooManyRedirects("redirect loop"))


def ping(url: str, timeout: float) -> None:
    """Any answer at all within ``timeout`` (an HTTP error status counts as an answer)."""
    try:
        with client(timeout=timeout) as c:
            c.head(url, headers=_headers())
    except httpx2.HTTPError as e:
        raise unreachable(url, e) from None


# --------------------------------------------------------------------------- GET


_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+|\*)")


def fetch(url: str, label: str, size: int, start: int, sink: Callable[[int, bytes], None], cancelled: Cancelled) -> None:
    """Stream ``url``'s bytes from ``start`` to ``size`` into ``sink(offset, data)``, as they arrive.

    A dropped connection or a stall after some bytes is resumed with a ``Range`` request from the byte
    reached (up to :data:`RETRIES` tries in a row without a new byte, and :data:`STALLS` silences; a
    silence with no new byte at all is not retried); a server that ignores ``Range`` starts again from 0 (``sink`` is called with offset 0).
    More bytes than ``size`` are refused. Raises DownloadCancelled, ConnectionDropped, HubTimeout,
    HubRefused, HubUnavailable, IntegrityError."""
    at = _Cursor(start)
    fruitless = stalls = 0
    with client(cancelled) as c:
        while at.offset < size:
            if cancelled():
                raise DownloadCancelled("download cancelled")
            before, broke = at.offset, None
            try:
                _one_request(c, url, label, size, at, sink, cancelled)
            except (httpx2.RemoteProtocolError, httpx2.ReadError, httpx2.ReadTimeout) as e:
                broke = e
            except httpx2.HTTPError as e:
                raise _transport_error(label, url, e) from None
            if at.offset >= size:
                break
            fruitless = 0 if at.offset > before else fruitless + 1
            if isinstance(broke, httpx2.ReadTimeout):
                stalls += 1
            if fruitless >= RETRIES or stalls > STALLS or (isinstance(broke, httpx2.ReadTimeout) and at.offset == before):
                if broke is not None:
                    err = _transport_error(label, url, broke)
                    raise type(err)(f"{err} ({at.offset:,} of {size:,} bytes kept)") from None
                raise IntegrityError(f"{label}: the download was incomplete (the hub sent {at.offset:,} of the "
                                     f"{size:,} bytes it announced); run the download again")
            if fruitless:
                time.sleep(min(0.2 * fruitless, 1.0))


class _Cursor:
    def __init__(self, offset: int):
        self.offset = offset


def _one_request(c, url: str, label: str, size: int, at: _Cursor, sink, cancelled: Cancelled) -> None:
    headers = _headers()
    if at.offset:
        headers["Range"] = f"bytes={at.offset}-"
    with c.stream("GET", url, headers=headers, follow_redirects=True) as r:
        if r.status_code == 416 and at.offset:  # the partial file is not a prefix of this file: start again
            sink(0, b"")
            at.offset = 0
            return
        if r.status_code >= 400:
            raise _status_error(label, r)
        if r.status_code == 206:
            m = _CONTENT_RANGE.fullmatch(r.headers.get("Content-Range", "").strip())
            if not m or int(m.group(1)) != at.offset:
                raise HubRefused(f"{label}: the model hub answered a resume with the wrong part of the file "
                                 f"(Content-Range {shown(r.headers.get('Content-Range'))})")
        elif r.status_code == 200:
            if at.offset:
                sink(0, b"")  # the server ignored Range: the whole file again
            at.offset = 0
        else:
            raise HubRefused(f"{label}: the model hub answered HTTP {r.status_code} to a download")
        for data in r.iter_raw():
            if cancelled():
                raise DownloadCancelled("download cancelled")
            if not data:
                continue
            if at.offset + len(data) > size:
                raise HubRefused(f"{label}: the model hub sent more than the {size:,} bytes it announced; refused")
            sink(at.offset, data)
            at.offset += len(data)
