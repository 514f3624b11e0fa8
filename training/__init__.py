"""Training: a run from a config (run.py), the loop (trainer.py), one optimizer step (step.py),
the schedule, the batches across epochs (loaders.py), validation while training, the final
evaluation, resuming, data parallelism, signals and the progress bar."""
