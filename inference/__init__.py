"""Inference: checkpoints (saved, loaded, averaged), sentences in and translations out
(translator.py; ct2_translator.py through a CTranslate2 export, ct2_export.py), the Python API
(api.py: `load_translator`), and scoring translations against references (scoring.py)."""

from inference.api import load_translator

__all__ = ["load_translator"]
