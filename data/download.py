"""gzip files fetched over HTTP(S) once and kept in a folder: Multi30k's official files, when no
local copy is given.

Each file is downloaded under a temporary name beside its place, checked (a gzip file, read to its
end, so that its length and CRC prove it whole), and only then renamed into place. A refused
connection, an HTTP error, a truncated or non-gzip answer therefore leave nothing under the
folder's names: the next run downloads again instead of reading a poisoned file. A file already
in place is never fetched again, so a second run needs no network.
"""

import gzip
import http.client
import logging
import socket
import sys
import urllib.error
import urllib.request
import zlib
from pathlib import Path
from typing import IO

from tqdm import tqdm

from utils.errors import UserError
from utils.files import atomic_file

log = logging.getLogger(__name__)

GZIP_MAGIC = b"\x1f\x8b"
TIMEOUT = 60  # seconds without an answer before a download gives up
CHUNK = 1 << 16


def _reason(error: BaseException) -> str:
    """What went wrong, in a few words a user recognises."""
    if isinstance(error, urllib.error.HTTPError):
        return f"HTTP {error.code} {error.reason}"
    if isinstance(error, urllib.error.URLError):
        error = error.reason if isinstance(error.reason, BaseException) else error
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, socket.gaierror):
        return "the host name does not resolve (no network?)"
    if isinstance(error, (TimeoutError, socket.timeout)):
        return f"no answer within {TIMEOUT} s"
    if isinstance(error, http.client.IncompleteRead):
        return f"the connection closed after {len(error.partial)} bytes, {error.expected} short"
    return getattr(error, "strerror", None) or str(error) or type(error).__name__


def _fetch(url: str, file: IO[bytes]) -> int:
    """Download `url` into `file`, with a progress bar on a terminal; its size in bytes."""
    try:
        response = urllib.request.urlopen(url, timeout=TIMEOUT)  # noqa: S310 - the user's data.url
    except ValueError as e:  # not a URL at all
        raise UserError(f"cannot download {url!r}: {e}") from None
    with response:
        total = int(response.headers.get("Content-Length") or 0) or None
        with tqdm(
            total=total,
            unit="B",
            unit_scale=True,
            desc=url.rsplit("/", 1)[-1],
            leave=False,
            disable=None,
            file=sys.stderr,
        ) as bar:  # disable=None: shown on a terminal only
            while chunk := response.read(CHUNK):
                file.write(chunk)
                bar.update(len(chunk))
        size = file.tell()
        if total is not None and size < total:  # the server said more than it sent
            raise http.client.IncompleteRead(b"\0" * size, total - size)
        file.flush()
    return size


def _check_gzip(path: Path, url: str) -> None:
    """A gzip file read to its end (length and CRC checked), else a UserError naming `url`."""
    with open(path, "rb") as file:
        head = file.read(64)
    if not head.startswith(GZIP_MAGIC):
        shown = head[:40].decode("utf-8", "replace").replace("\n", " ")
        raise UserError(f"{url} did not answer with a gzip file (it begins {shown!r})")
    try:
        with gzip.open(path, "rb") as stream:
            while stream.read(CHUNK):
                pass
    except (gzip.BadGzipFile, EOFError, zlib.error) as e:
        raise UserError(f"{url} sent an incomplete or corrupt gzip file ({e})") from None


def download_gzip_files(urls: dict[str, str], folder: Path, way_out: str) -> dict[str, Path]:
    """{file name: url} -> {file name: its path in `folder`}, downloading the files not yet there.

    Every failure is one UserError naming the URL, what happened and `way_out` (what the user can
    do instead), with nothing left under the file's name."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {name: folder / name for name in urls}
    missing = {name: url for name, url in urls.items() if not paths[name].is_file()}
    for name, url in missing.items():
        log.info("downloading %s", url)
        try:
            with atomic_file(paths[name], "wb") as file:  # under its name only once checked
                try:
                    size = _fetch(url, file)
                except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
                    raise UserError(f"cannot download {url}: {_reason(e)}") from None
                _check_gzip(Path(file.name), url)
        except UserError as e:
            raise UserError(f"{e}; {way_out}") from None
        log.info("downloaded %s (%s bytes)", name, f"{size:,}")
    if missing:
        log.info("%d file(s) downloaded into %s; later runs read them from there", len(missing), folder)
    return paths
