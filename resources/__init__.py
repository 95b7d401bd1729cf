"""Bundled data (model weights, icons, styles), located with importlib.resources."""
