"""Inference: checkpoints (saved, loaded, averaged), sentences in and translations out
(translator.py), and scoring translations against references (scoring.py)."""
