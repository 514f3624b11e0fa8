"""minitrans engine: what training and translation share (config, checkpoints, decoding)."""
