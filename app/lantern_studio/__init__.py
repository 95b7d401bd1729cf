"""Lantern Studio: autoregressive image generation with LANTERN relaxed speculative decoding."""

__version__ = "0.1.0"
