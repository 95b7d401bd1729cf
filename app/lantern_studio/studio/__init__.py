"""The studio without Qt (docs/architecture.md, "The studio session").

:mod:`.session` is what the studio does when a person asks for something (Generate, Compare, ×4, Sweep,
cancel, a model, Save) and when the engine answers; :mod:`.events` what it tells the views;
:mod:`.preferences` what it remembers. Under them, plain dataclasses a test drives without a QApplication:
the job queue's order, positions and cancel rules (:mod:`.queue`), the Compare pairs and their ratios
(:mod:`.compare`), the race replay's clock (:mod:`.race`), the trade-off chart's points and axes
(:mod:`.tradeoff`), Generate ×4's grid (:mod:`.variations`), Sweep δ / k's ladder, rungs and curve
(:mod:`.sweep`), what the canvas column shows (:mod:`.display`), the jobs and results passed to and from the
engine thread (:mod:`.jobs`), the loaded model and the running of one job (:mod:`.engine_host`), replays (:mod:`.replay`) and the history (:mod:`.history_store`). The Qt
window (gui/) binds widgets to the session and draws its events. Contracts in pyproject.toml keep Qt and
tensor code out of this package.
"""
