"""What every room and command shares, importing none of them: the error a user can fix
(errors.py), option parsing with one-line errors (cli.py), device and precision (device.py),
files written atomically (files.py), UTF-8 lines (text.py), where a run keeps its checkpoints
(checkpoint_files.py), a package's names imported when first used (lazy_names.py)."""
