"""Analysis of what attention heads do: per-head statistics (head_stats.py) and importance by
masking (head_importance.py)."""
