"""What a person watching ``folio convert`` sees while it runs (all of it on stderr).

- ``LiveDisplay`` (a terminal): one bar for the whole run — pages done/total, pages/s, ETA —
  and under it a line per file in flight. Until every file is submitted the total is an
  estimate (pages per file so far, times the files left), marked with ``~``.
- ``LineDisplay`` (not a terminal: logs, CI): one line per file as it finishes.
- ``QuietDisplay``: nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Console, Group
from rich.live import Live
from rich.markup import escape
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from folio_client.convert import Outcome
from folio_client.plan import Item


class QuietDisplay:
    def started(self, item: Item) -> None:
        pass

    def progressed(self, item: Item, *, done: int, total: int, status: str) -> None:
        pass

    def finished(self, outcome: Outcome) -> None:
        pass


class LineDisplay(QuietDisplay):
    def __init__(self, console: Console) -> None:
        self.console = console

    def finished(self, outcome: Outcome) -> None:
        if outcome.status == "skipped":
            return
        text = f"{outcome.status:9} {escape(outcome.item.label)}"
        if outcome.status == "converted":
            pages = f"{outcome.pages} page" + ("" if outcome.pages == 1 else "s")
            text += f" -> {escape(str(outcome.item.output))} ({pages})"
        else:
            text += f": {escape(outcome.reason)}"
        self.console.print(text, highlight=False, soft_wrap=True)


class PagesPerSecondColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("     - pages/s" if speed is None else f"{speed:6.2f} pages/s")


class PagesColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        total = int(task.total or 0)
        mark = "~" if task.fields.get("estimated") else ""
        return Text(f"{int(task.completed)}/{mark}{total} pages")


class FilePagesColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        total = "?" if task.total is None else str(int(task.total))
        return Text(f"{int(task.completed)}/{total} {task.fields['status']}")


@dataclass
class _FileState:
    task: TaskID
    done: int = 0
    total: int = 0


class LiveDisplay:
    def __init__(self, console: Console, *, files: int) -> None:
        self.files = files
        self.files_done = 0
        self.known_pages = 0  # the totals of the files submitted so far
        self.submitted = 0
        self.pages_finished = 0
        self.overall = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            PagesColumn(),
            PagesPerSecondColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TimeElapsedColumn(),
            console=console,
        )
        self.in_flight = Progress(
            TextColumn("  {task.description}", markup=False),
            BarColumn(bar_width=20),
            FilePagesColumn(),
            console=console,
        )
        self.task = self.overall.add_task(self._describe(), total=None, estimated=True)
        self.files_in_flight: dict[Item, _FileState] = {}
        self.live = Live(Group(self.overall, self.in_flight), console=console, transient=False)
        self._update_total()

    def __enter__(self) -> LiveDisplay:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.stop()

    def _describe(self) -> str:
        return f"files {self.files_done}/{self.files}"

    def _update_total(self) -> None:
        left = self.files - self.files_done - len(self.files_in_flight)
        waiting = [state for state in self.files_in_flight.values() if not state.total]
        per_file = self.known_pages / self.submitted if self.submitted else 1
        estimated = left > 0 or bool(waiting)
        total = self.known_pages + round(per_file * (left + len(waiting)))
        self.overall.update(
            self.task,
            total=max(total, self.pages_finished),
            completed=self.pages_finished,
            description=self._describe(),
            estimated=estimated,
        )

    def started(self, item: Item) -> None:
        task = self.in_flight.add_task(item.label, total=None, status="uploading")
        self.files_in_flight[item] = _FileState(task=task)
        self._update_total()

    def progressed(self, item: Item, *, done: int, total: int, status: str) -> None:
        state = self.files_in_flight.get(item)
        if state is None:
            return
        if not state.total and total:
            self.known_pages += total
            self.submitted += 1
        self.pages_finished += done - state.done
        state.done, state.total = done, total
        self.in_flight.update(state.task, completed=done, total=total or None, status=status)
        self._update_total()

    def finished(self, outcome: Outcome) -> None:
        state = self.files_in_flight.pop(outcome.item, None)
        if state is None:  # skipped before the run started: not part of this run's work
            self.files -= 1
        else:
            self.in_flight.remove_task(state.task)
            self.files_done += 1
            if outcome.status == "failed":
                self.overall.console.print(
                    f"[red]failed[/] {escape(outcome.item.label)}: {escape(outcome.reason)}",
                    highlight=False,
                )
        self._update_total()
