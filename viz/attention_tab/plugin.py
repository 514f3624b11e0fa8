"""Backend of the ATTENTION tab: the runs, steps, sentences and maps stored under the logdir,
as JSON, and the tab's own script (static/), served by TensorBoard's process.

Routes, under /data/plugin/attention/:

    runs                               {"runs": [{"run", "steps": [...]}]}, runs with attention only
    sentences?run=R&step=S             {"step", "sentences": [{source, translation, reference,
                                        layers: {kind: n}, heads: {kind: n}}]}
    maps?run=R&step=S&probe=P&kind=K   {"rows", "cols", "layers": [(H, T_q, T_k) nested lists]}
    static/index.js                    the frontend, styles included (no build step, no network)
"""
import mimetypes
import re
from pathlib import Path

import numpy as np
from tensorboard.backend import http_util
from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from viz.attention_store import find_runs, read_step, step_path, steps
from viz.kinds import KINDS, TITLES

PLUGIN_NAME = "attention"
STATIC = Path(__file__).parent / "static"


class BadRequest(Exception):
    """A request naming something that is not there: answered with its status and message."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


INTEGER = re.compile(r"-?[0-9]{1,18}")  # ASCII digits only, and few enough for int() and numpy


def _integer(request, name: str) -> int:
    value = request.args.get(name, "")
    if not INTEGER.fullmatch(value):
        raise BadRequest(f"{name} must be an integer, got {value[:40]!r}")
    return int(value)


class AttentionPlugin(base_plugin.TBPlugin):
    plugin_name = PLUGIN_NAME

    def __init__(self, context: base_plugin.TBContext) -> None:
        self.logdir = Path(context.logdir) if context.logdir else None

    def frontend_metadata(self) -> base_plugin.FrontendMetadata:
        return base_plugin.FrontendMetadata(es_module_path="/static/index.js", tab_name="Attention")

    def is_active(self) -> bool:
        """Shown among the tabs when some run has attention data (else under INACTIVE, where
        opening it explains what is missing)."""
        return bool(self.runs())

    def get_plugin_apps(self) -> dict:
        return {"/runs": self._serve(self.runs_json), "/sentences": self._serve(self.sentences_json),
                "/maps": self._serve(self.maps_json), "/static/*": self._serve_static}

    # --- data -----------------------------------------------------------------------------

    def runs(self) -> dict[str, Path]:
        return find_runs(self.logdir) if self.logdir is not None and self.logdir.is_dir() else {}

    def _inside_logdir(self, path: Path) -> bool:
        """Whether `path`, links followed, lies inside the logdir: nothing else is served."""
        return path.resolve().is_relative_to(self.logdir.resolve())

    def _stored(self, request):
        run = request.args.get("run", "")
        step = _integer(request, "step")
        if self.logdir is None or "\0" in run:
            raise BadRequest(f"no run {run[:200]!r} with attention data", 404)
        # the run's folder directly, not a walk of the whole logdir on every request; a name
        # that leads outside the logdir is no run, and a file linked from outside is not served
        folder = self.logdir / run
        if not self._inside_logdir(folder) or not steps(folder):
            raise BadRequest(f"no run {run[:200]!r} with attention data", 404)
        if not self._inside_logdir(step_path(folder, step)):
            raise BadRequest(f"run {run!r}: the attention of step {step} lies outside the logdir", 403)
        try:
            return read_step(folder, step)
        except FileNotFoundError:
            raise BadRequest(f"run {run!r} has no attention at step {step}", 404) from None

    def runs_json(self, request) -> dict:
        return {"runs": [{"run": name, "steps": steps(folder)} for name, folder in self.runs().items()],
                "kinds": [[kind, TITLES[kind]] for kind in KINDS]}

    def sentences_json(self, request) -> dict:
        stored = self._stored(request)
        return {"step": _integer(request, "step"),
                "sentences": [{key: sentence[key] for key in ("source", "translation", "reference", "layers", "heads")}
                              for sentence in stored.sentences]}

    def maps_json(self, request) -> dict:
        stored = self._stored(request)
        probe, kind = _integer(request, "probe"), request.args.get("kind", "")
        if not 0 <= probe < len(stored.sentences):
            raise BadRequest(f"probe must be in 0..{len(stored.sentences) - 1}, got {probe}", 404)
        if kind not in KINDS:
            raise BadRequest(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        rows, cols = stored.axis_labels(probe, kind)
        # 4 decimals: finer than any colour and a third of the JSON of full floats
        return {"rows": rows, "cols": cols,
                "layers": [np.round(weights, 4).tolist() for weights in stored.weights(probe, kind)]}

    # --- HTTP -----------------------------------------------------------------------------

    @staticmethod
    def _serve(handler):
        @wrappers.Request.application
        def route(request):
            try:
                return http_util.Respond(request, handler(request), "application/json")
            except BadRequest as error:
                return http_util.Respond(request, {"error": str(error)}, "application/json", code=error.status)
        return route

    @wrappers.Request.application
    def _serve_static(self, request):
        name = request.path.rsplit("/static/", 1)[-1]
        path = STATIC / name
        if "/" in name or not path.is_file():  # only the files of static/ itself
            return http_util.Respond(request, "not found", "text/plain", code=404)
        return http_util.Respond(request, path.read_bytes(), mimetypes.guess_type(path.name)[0] or "text/plain")
