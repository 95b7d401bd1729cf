"""Subcommands whose wiring spans several layers (e.g. ``models distill`` runs
a trainer on a catalogue model), so they live above models, training and eval.
``cli.py`` registers them; see docs/architecture.md.
"""
