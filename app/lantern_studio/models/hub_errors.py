"""What can go wrong with a Hub download, each worded for the person who asked for it.

Every error is one line (the CLI prints it after ``error:``, the Models dialog
shows it under the table) and names the file or folder concerned. The classes
live here, apart from :mod:`models.hub`, so that the cache layout
(:mod:`models.hub_cache`) and the transfer (:mod:`models.hub_http`) raise the
same ones; ``models.hub`` re-exports them all.
"""

from __future__ import annotations

__all__ = [
    "HubError", "HubUnavailable", "ConnectionDropped", "HubTimeout", "HubRefused", "HubOffline",
    "NotDownloaded", "NotEnoughSpace", "CacheUnusable", "IntegrityError", "DownloadCancelled", "shown",
]


class HubError(RuntimeError):
    """A download problem, worded for the person who asked for it (one line)."""


class HubUnavailable(HubError):
    """The hub could not be reached (no network, DNS, proxy, firewall, wrong HF_ENDPOINT)."""


class ConnectionDropped(HubUnavailable):
    """The connection broke during a transfer and resuming did not get the rest."""


class HubTimeout(HubUnavailable):
    """The hub did not answer, or stopped sending, within the time allowed."""


class HubRefused(HubError):
    """The hub's answer was not used: a header that names a path or is not a hash, a size or hash
    other than the catalogue pins, a redirect loop, more bytes than announced, an HTTP error."""


class NotDownloaded(HubError):
    """Files are missing from the local cache and offline mode forbids fetching them."""


class HubOffline(HubError):
    """Offline mode is on (``HF_HUB_OFFLINE``): the hub is not asked at all."""


class NotEnoughSpace(HubError):
    """The cache's disk can't hold the download (checked before it starts, or it filled up during it)."""


class CacheUnusable(HubError):
    """The cache folder can't be written: HF_HOME is a file, the folder is read-only, no permission."""


class IntegrityError(HubError):
    """A downloaded file has the wrong size or hash; the bad bytes were not kept."""


class DownloadCancelled(HubError):
    """The caller cancelled the download."""


def shown(value, limit: int = 60) -> str:
    """A value from a server (a header, a path) as it may appear in a message: quoted, escaped, cut."""
    text = repr(str(value))
    return text if len(text) <= limit else text[: limit - 2] + "…" + text[0]
