"""The window's views of running and finished jobs: what the studio session's job events draw.

A job's frames go where the session says (:class:`~..studio.display.Target`): the single canvas, one lane
of the Compare race, or one cell of the ×4 grid; a finished job's numbers go to the stats panel and the
trade-off chart, its history row to the gallery, a Compare's ratio to the stats' Compare box.
"""

from __future__ import annotations

from ..export import target_forwards
from ..studio.variations import COUNT as VARIATIONS
from ..studio.compare import VANILLA
from ..studio.display import GRID, RACE, SINGLE
from ..studio.events import FrameShown, JobFinished, JobStarted, JobStopped


class JobViews:
    def __init__(self, window):
        self.w = window
        ev = window.session.events
        ev.subscribe(JobStarted, self.started)
        ev.subscribe(FrameShown, self.frame)
        ev.subscribe(JobFinished, self.finished)
        ev.subscribe(JobStopped, self.stopped)

    def show_view(self, view: str) -> None:
        """The canvas column's view: the single canvas, the race of a Compare, or the grid of a Generate ×4
        (⊞ Variations on the single canvas's toolbar goes back to the grid once there is one)."""
        w = self.w
        w.views.setCurrentWidget({RACE: w.race, GRID: w.variations_view}.get(view, w.single_view))
        if view != RACE:
            w.race.stop()
        w.back_to_grid.setVisible(view == SINGLE and w.studio.variations is not None)

    def _total(self) -> int:
        info = self.w.model_info
        return info.grid ** 2 if info else 0

    def started(self, e: JobStarted) -> None:
        w, job, target = self.w, e.job, e.target
        if target.cell is not None:  # a variation: the grid (new for its first one) shows it starting
            if w.variations_view.vset is not w.studio.variations:
                w.variations_view.start(w.studio.variations, self._total())
            w.variations_view.refresh()
            if w.studio.view == GRID:  # not while a person looks at a chosen variation
                self.show_view(GRID)
                w.stats.start(job)
        else:
            self.show_view(target.view)
            if target.view == RACE:
                if target.lane == VANILLA or w.race.pair is not w.studio.race:
                    w.race.start(w.studio.race, self._total())
                w.race.lane_started(target.lane, self._total())
            else:
                w.replay.load(None, None)
                w.canvas.start(self._total())
            w.gallery.clear_selection()  # the picture shown is a new one, in no history row yet
            w.stats.start(job)
        w.statusBar().queue(f"Generating {job.label()}…")

    def frame(self, e: FrameShown) -> None:
        w, f, target = self.w, e.frame, e.target
        if target.view == GRID:
            w.variations_view.show_frame(target.cell, f)
            if f.job_id == w.shown_job_id:
                w.stats.update_live(f)
            return
        if target.view == RACE:
            w.race.show_frame(target.lane, f)
        else:
            w.canvas.show_frame(f)
        w.stats.update_live(f)

    def finished(self, e: JobFinished) -> None:
        w, r = self.w, e.result
        if w.studio.canvas_finished and e.cell is None:  # a chosen variation keeps its replay
            w.replay.load(r.recording, r.decisions)
        if e.entry is not None:
            w.gallery.refresh()
            if w.studio.finished is not None and w.studio.finished.job_id == r.job.id:
                w.gallery.select(e.entry.id)  # the highlight follows the picture shown
        if e.cell is None or e.followed:  # a variation's numbers go to the stats only when followed
            w.stats.show_result(r)
        w.chart.add_result(r)
        s = r.stats
        done = f"done · %v / %m tokens · {target_forwards(s['target_forwards'])} target forwards · " \
               f"{s['wall_seconds']:.2f} s"
        if e.cell is not None:
            w.variations_view.refresh()
        elif e.on_lane:
            w.race.lanes[w.studio.race.half(r.job.id).side].set_state(done)
        else:
            w.canvas.set_status(done)
        pair = e.pair
        if pair is not None:
            w.stats.show_compare(pair)
            if w.studio.race is pair:
                w.race.pair_done(pair)
            if w.narrow:  # the ratio is on the Results tab: bring it forward
                w.side_tabs.setCurrentWidget(w.right_scroll)
                w.right_scroll.ensureWidgetVisible(w.stats.compare_box)

    def stopped(self, e: JobStopped) -> None:
        """A job was cancelled or failed: the stats and the canvas (or its race lane, or its grid cell) say so."""
        w, job, how = self.w, e.job, e.how
        cancelled = how == "Cancelled"
        if e.cell is not None:
            if job.id == w.shown_job_id:
                fixed, total = w.variations_view.tokens(e.cell)
                w.stats.stopped(job, how, fixed or 0, total) if cancelled else w.stats.stopped(job, how)
            w.variations_view.refresh()
            return
        if job.id == w.shown_job_id:
            progress = w.race.lanes[w.studio.race.half(job.id).side].progress if e.on_lane else w.canvas.progress
            if cancelled:
                w.stats.stopped(job, how, progress.value(), progress.maximum())
            else:
                w.stats.stopped(job, how)
            if not e.on_lane:
                w.canvas.set_status("cancelled at %v / %m tokens" if cancelled else "failed")
        if e.pair is not None and w.studio.race is e.pair:
            w.race.pair_stopped(e.pair)

    # ------------------------------------------------------------------ the variations grid
    def choose_variation(self, index: int) -> bool:
        """A click on grid cell ``index``: a finished variation becomes the current picture as a history
        click makes one (canvas, stats, prompt and seed with New seed each Generate off, replay bar, history
        selection); a variation still decoding (or stopped) says so and the grid stays."""
        w = self.w
        cell = w.studio.choose_variation(index)
        if cell is None:
            v = w.studio.variations
            state = v.cells[index].state if v is not None and 0 <= index < len(v.cells) else "gone"
            w.statusBar().showMessage(f"Variation {index + 1} is {state}: only a finished one can be chosen", 4000)
            return False
        r = cell.result
        w.controls.set_prompt(cell.job.prompt)
        w.controls.set_settings(cell.job.settings)
        self.show_view(SINGLE)
        w.canvas.show_image(r.image, r.decisions)
        w.canvas.set_status(f"variation {index + 1} of {VARIATIONS} · %v / %m tokens · "
                            f"{target_forwards(r.stats['target_forwards'])} target forwards")
        w.stats.show_record(cell.record, r.decisions, f"Variation {index + 1} of {VARIATIONS} · seed {cell.seed}")
        w.replay.load(r.recording, r.decisions)
        if cell.entry_id is not None:
            w.gallery.select(cell.entry_id)
        w.variations_view.refresh()
        w.statusBar().showMessage(f"Variation {index + 1}: “{cell.job.prompt}” (seed {cell.seed})"
                                  f"{w.keep_seed()}", 8000)
        return True

    def show_variations(self) -> bool:
        """⊞ Variations: back to the grid of the latest Generate ×4 (the chosen one stays the current picture)."""
        w = self.w
        if not w.studio.show_grid():
            return False
        self.show_view(GRID)
        w.variations_view.refresh()
        return True
