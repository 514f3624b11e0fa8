"""Local HTTP servers on 127.0.0.1 for what would otherwise need the internet: a mirror of files
that can also misbehave (data.url), and a Hugging Face hub that knows no dataset (HF_ENDPOINT)."""

import http.server
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path


class MirrorHandler(http.server.SimpleHTTPRequestHandler):
    """Serves a folder, and misbehaves on request: /truncated/NAME sends half of NAME under the
    whole one's Content-Length, /html/NAME a web page instead of the file."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        kind, _, name = self.path.lstrip("/").partition("/")
        if kind in ("truncated", "html"):
            body = (Path(self.directory) / name).read_bytes() if kind == "truncated" else b"<html>Sign in</html>"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body[: len(body) // 2] if kind == "truncated" else body)
            return
        super().do_GET()

    def log_message(self, *args) -> None:  # quiet
        pass


class EmptyHubHandler(http.server.BaseHTTPRequestHandler):
    """The Hugging Face hub's answer for a repository that does not exist, to every request."""

    def do_GET(self) -> None:  # noqa: N802
        self.send_response(404)
        self.send_header("X-Error-Code", "RepoNotFound")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_HEAD = do_GET

    def log_message(self, *args) -> None:
        pass


@contextmanager
def serving(handler) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 and a port of its choosing, answering with `handler`; yields its
    base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def mirror(folder: Path):
    """`serving(mirror(folder))`: the files of `folder`, and MirrorHandler's misbehaviour."""
    return partial(MirrorHandler, directory=str(folder))


def free_port() -> int:
    """A port nothing listens on: bound, then closed (a refused connection)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
