"""minitrans visualisation: attention maps as figures, PNG files and terminal heatmaps."""
