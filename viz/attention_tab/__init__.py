"""The ATTENTION tab of TensorBoard: a dynamic plugin (registered in pyproject.toml) that draws
the probe sentences' attention stored by viz/attention_store.py, at every evaluation."""
