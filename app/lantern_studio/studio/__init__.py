"""The studio's state and rules, without Qt (docs/architecture.md, "The studio: a model under the window").

What the window decides but does not draw lives here, as plain dataclasses a test can drive without a
QApplication: the job queue's order, positions and cancel rules (:mod:`.queue`), the Compare pairs and
their ratios (:mod:`.compare`), the race replay's clock (:mod:`.race`), the trade-off chart's points and
axes (:mod:`.tradeoff`), Generate ×4's grid (:mod:`.variations`), Sweep δ / k's ladder, rungs and curve
(:mod:`.sweep`), the loaded model and the running of one job (:mod:`.engine_host`), and the window's own
state on top of them (:mod:`.studio`). The Qt classes
(``gui/main_window.py``, ``gui/job_queue.py``, the panels) forward Qt's events here and redraw from it.
A contract in pyproject.toml keeps Qt and torch out of this package.
"""
