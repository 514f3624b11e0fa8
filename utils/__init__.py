"""What the commands and rooms share: option parsing with one-line errors (cli.py), device and
precision (device.py), files written atomically (files.py)."""
