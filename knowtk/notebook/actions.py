"""``RecordActions``: change one record from a notebook (Edit fields, Supersede by…, Withdraw, Reinstate).

Two steps, as a reviewer works: **Preview** reads the record (its sha256 is kept), shows the change as a
diff and what safeguard it records or lifts, writing nothing (``Store.preview``); **Confirm** makes the
change on that very hash (``knowledge_mutation``), so a file changed since the preview is refused
(``PublicationConflict``), and shows the receipt: the operation, each file with its diff, whether the index has
caught up (``indexed``). The receipt stays until the next preview, with an **Undo** that puts the files back
(``Store.undo``: conditioned on the hashes the change left, with a receipt of its own, itself undoable).
Everything is plain widget state: ``preview()``, ``confirm()`` and ``undo()`` are what the buttons do.

A store opened with ``read_only=True`` offers no action (the panel says so in one line), and
``record_actions`` gives a widget nothing to show under a record when the store or the widget is read-only.

The panel offers what the record's effective lifecycle allows (Supersede by… and Withdraw for an active record,
Reinstate for a withdrawn or superseded one, Edit fields for both) and shows only the input the chosen action
takes: the fields for Edit fields, the replacing id for Supersede by…, a reason for Withdraw and Reinstate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as W

from knowtk.errors import InvalidArgument, KnowtkError
from knowtk.model.records import FileProblem, parse_yaml
from knowtk.store import Store
from knowtk.ui.front import Front
from knowtk.ui.style import escape, wrap

__all__ = ["OPERATIONS", "RecordActions", "keep_out_of_answer", "panel_in", "receipt_html", "record_actions"]

OPERATIONS = {"Edit fields": "update", "Supersede by…": "supersede", "Withdraw": "withdraw", "Reinstate": "reinstate"}
# the actions a record's effective lifecycle allows: an active record is withdrawn or superseded, never reinstated;
# a withdrawn or superseded one is reinstated (the only way back), never withdrawn or superseded again
ACTIVE_ACTIONS = ("Edit fields", "Supersede by…", "Withdraw")
LIFTED_ACTIONS = ("Edit fields", "Reinstate")


def _file_diff(store: Store, entry: dict[str, Any]) -> str:
    """One file's change in a receipt as a unified diff (a created file whole, a removed one named)."""
    before, after = entry.get("sha256Before"), entry.get("sha256After")
    if before == after:
        return "(this file did not change)"
    if before is None or after is None:
        return f"(the file {'was created' if before is None else 'was removed'}: {entry['path']})"
    try:
        return store.diff(entry["id"], before, after)
    except KnowtkError as exc:
        return f"(no diff: {exc})"


def receipt_html(store: Store, receipt: dict[str, Any], *, title: str = "saved") -> str:
    """A receipt as a reader checks it: the operation, when and why, each file with its diff, whether it is indexed."""
    if not receipt.get("id"):  # an update that changes nothing writes nothing and keeps no receipt
        return wrap(
            f"<div class='box'><b>NOTHING CHANGED</b> · {escape(receipt['operation'])}: the file says so already</div>"
        )
    indexed = "indexed" if receipt.get("indexed") else "not indexed yet (the next query indexes it)"
    reason = f" · reason: {escape(receipt['reason'])}" if receipt.get("reason") else ""
    parts = [
        f"<div class='box good'><b>{escape(title.upper())}</b> · {escape(receipt['operation'])} · receipt "
        f"<code>{escape(receipt['id'])}</code> · {escape(receipt['at'])}{reason} · <b>{indexed}</b></div>"
    ]
    for entry in receipt["records"]:
        sha = entry.get("sha256After") or ""
        parts.append(
            f"<p><b>{escape(entry['id'])}</b> {escape(entry['path'])} · sha256 "
            f"<span title='{escape(sha)}'>{escape(sha[:12])}…</span></p><pre>{escape(_file_diff(store, entry))}</pre>"
        )
    return wrap("".join(parts))


def record_actions(
    store: Store,
    id: str | None,
    *,
    on_saved: Callable[[dict[str, Any]], None] | None = None,
    read_only: bool = False,
    keep: RecordActions | None = None,
) -> list[W.Widget]:
    """What a widget shows under record ``id``: its ``RecordActions`` (``keep`` when it is that record's panel
    already, so a receipt shown stays), or nothing for no record or a read-only store or widget."""
    if id is None or read_only or store.read_only:
        return []
    if keep is not None and keep.id == id:
        return [keep]
    return [RecordActions(store, id, on_saved=on_saved)]


def panel_in(*boxes: W.Box) -> RecordActions | None:
    """The ``RecordActions`` shown in the first of ``boxes`` that holds one (under the row, or kept aside)."""
    for box in boxes:
        for child in box.children:
            if isinstance(child, RecordActions):
                return child
    return None


def keep_out_of_answer(pane: W.VBox, panel: W.Widget | None, shown: W.VBox) -> None:
    """After a save: when the changed record left the answer (withdrawn, superseded), its panel (the receipt and
    Undo) stays in ``pane``; when it is back under its row (``shown`` holds it), ``pane`` empties."""
    if isinstance(panel, RecordActions) and panel not in shown.children and panel.receipt is not None:
        note = W.HTML(wrap(f"<p><b>{escape(panel.id)}</b> left this answer with the change; its receipt:</p>"))
        pane.children = [note, panel]
    else:
        pane.children = []


class RecordActions(Front):
    """Change record ``id``: pick an action, fill it in, Preview (a diff, nothing written), Confirm (the receipt)."""

    def __init__(self, store: Store, id: str, *, on_saved: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.store, self.id, self.on_saved = store, id, on_saved
        self.pending: dict[str, Any] | None = None  # the previewed change: its arguments, with the hash read
        self.receipt: dict[str, Any] | None = None
        self.action = W.ToggleButtons(options=self._offered(), value="Edit fields", description="action")
        self.fields = W.Textarea(
            placeholder="YAML: the fields to set, e.g.\nsummary: One line\ntags: [a, b]\nowner: null   # removes it",
            layout=W.Layout(width="60%", height="90px"),
        )
        self.by = W.Text(description="by", placeholder="the replacing record's id")
        self.reason = W.Text(description="reason", placeholder="kept in the receipt")
        self.preview_button = W.Button(description="Preview", button_style="primary")
        self.confirm_button = W.Button(description="Confirm", disabled=True)
        self.undo_button = W.Button(description="Undo", tooltip="put the files back as they were", disabled=True)
        self.undo_button.layout.display = "none"
        self.output = W.HTML()
        if store.read_only:  # nothing to offer: every change would be refused
            super().__init__(children=[W.HTML(wrap(f"<p class='muted'>{escape(id)}: the store is read-only</p>"))])
            return
        super().__init__(
            children=[
                W.HTML(wrap(f"<b>change {escape(id)}</b>")),
                self.action,
                self.fields,
                self.by,
                self.reason,
                W.HBox([self.preview_button, self.confirm_button, self.undo_button]),
                self.output,
            ]
        )
        for control in (self.action, self.fields, self.by, self.reason):
            control.observe(lambda _change: self._stale(), "value")
        self.action.observe(lambda _change: self._show_inputs(), "value")
        self._show_inputs()
        self.preview_button.on_click(lambda _b: self.preview())
        self.confirm_button.on_click(lambda _b: self.confirm())
        self.undo_button.on_click(lambda _b: self.undo())

    def _offered(self) -> list[str]:
        """The actions the record's effective lifecycle allows (safeguards included); all of them for an id
        the snapshot does not know (the tool then says why it refuses)."""
        snap = self.store.snapshot()
        if self.id not in snap.records:
            return list(OPERATIONS)
        return list(ACTIVE_ACTIONS if snap.lifecycle.get(self.id, "active") == "active" else LIFTED_ACTIONS)

    def _show_inputs(self) -> None:
        """Show only what the chosen action takes: the fields to edit, the replacing id, or a reason."""
        operation = OPERATIONS[self.action.value]
        shown = {
            self.fields: operation == "update",
            self.by: operation == "supersede",
            self.reason: operation in ("withdraw", "reinstate"),
        }
        for control, visible in shown.items():
            control.layout.display = None if visible else "none"

    def _refresh_actions(self) -> None:
        """After a save: offer what the record's new lifecycle allows (a withdrawn record: Reinstate)."""
        offered = self._offered()
        if list(self.action.options) != offered:
            keep = self.action.value if self.action.value in offered else offered[0]
            self.action.options = offered
            self.action.value = keep

    def _stale(self) -> None:
        """An input changed after the preview: confirm only what was previewed."""
        self.pending = None
        self.confirm_button.disabled = True

    def _args(self) -> dict[str, Any]:
        operation = OPERATIONS[self.action.value]
        args: dict[str, Any] = {"operation": operation, "id": self.id}
        if operation == "update":
            parsed = parse_yaml(self.fields.value or "{}", what="the fields")
            if isinstance(parsed, FileProblem) or not isinstance(parsed, dict):
                raise InvalidArgument("record", "write the fields as a YAML mapping (key: value per line)")
            args["record"] = parsed
        if operation == "supersede":
            args["by"] = self.by.value.strip()
        if operation in ("withdraw", "reinstate"):
            args["reason"] = self.reason.value
        return args

    def preview(self) -> dict[str, Any] | None:
        """Read the record, and show what the action would change; nothing is written. None when refused."""
        self.receipt = None
        self._offer_undo(False)
        try:
            current = self.store.record(self.id)["record"]
            sha = current["sha256"] if current else self._file_sha()
            args = {**self._args(), "expected_sha256": sha}
            shown = self.store.preview(**args)
        except KnowtkError as exc:
            self._refused(exc)
            return None
        self.pending = args if shown["changes"] else None
        self.confirm_button.disabled = self.pending is None
        parts = [f"<p><b>{escape(shown['operation'])}</b> on the file read at sha256 {escape(sha[:12])}…</p>"]
        for r in shown["records"]:
            parts.append(f"<pre>{escape(r['diff']) or '(no change to this file)'}</pre>")
        if shown["safeguards"]:
            parts.append(f"<p>records the safeguard of {escape(', '.join(shown['safeguards']))} first</p>")
        if shown["lifts"]:
            parts.append(f"<p>lifts the safeguard of {escape(', '.join(shown['lifts']))} (journalled)</p>")
        if not shown["changes"]:
            parts.append("<p>nothing to change</p>")
        self.output.value = wrap("".join(parts))
        return shown

    def _file_sha(self) -> str:
        """A record no query returns (withdrawn, or unavailable): its file's hash as the snapshot read it."""
        r = self.store.snapshot().records.get(self.id)
        if r is None:
            raise InvalidArgument("id", f"no record {self.id!r} in the store")
        return r.sha256

    def confirm(self) -> dict[str, Any] | None:
        """Make the previewed change on the hash read at the preview; the receipt (None when refused)."""
        if self.pending is None:
            self.output.value = wrap("<p>Preview the change first.</p>")
            return None
        args, self.pending = self.pending, None
        self.confirm_button.disabled = True
        operation = args.pop("operation")
        try:
            result = getattr(self.store, operation)(**args)
        except KnowtkError as exc:
            self._refused(exc)
            return None
        self._saved(result["receipt"], "saved")
        return self.receipt

    def undo(self) -> dict[str, Any] | None:
        """Undo the change shown (``Store.undo``, on the hashes it left); its own receipt (None when refused)."""
        if self.receipt is None or not self.receipt.get("id"):
            self.output.value = wrap("<p>Nothing to undo: confirm a change first.</p>")
            return None
        self._offer_undo(False)
        try:
            result = self.store.undo(self.receipt)
        except KnowtkError as exc:
            self._refused(exc)
            return None
        self._saved(result["receipt"], "undone")
        return self.receipt

    def _saved(self, receipt: dict[str, Any], title: str) -> None:
        """Show the receipt, offer what the new lifecycle allows, tell the widget (which searches again), and show
        the receipt once more: that query has indexed the change."""
        self.receipt = receipt
        self.output.value = receipt_html(self.store, receipt, title=title)
        self._refresh_actions()
        self._offer_undo(bool(receipt.get("id")))
        if self.on_saved is not None:
            self.on_saved(receipt)
        self.show_receipt(title)

    def show_receipt(self, title: str = "saved") -> None:
        """Draw the kept receipt again, read back from the history (``indexed`` turns true after a query)."""
        if self.receipt is None or not self.receipt.get("id"):
            return
        found = [r for r in self.store.history(limit=5)["receipts"] if r["id"] == self.receipt["id"]]
        if found:
            self.receipt = found[0]
        self.output.value = receipt_html(self.store, self.receipt, title=title)

    def _offer_undo(self, offered: bool) -> None:
        self.undo_button.disabled = not offered
        self.undo_button.layout.display = None if offered else "none"

    def _refused(self, exc: KnowtkError) -> None:
        self.pending = None
        self.confirm_button.disabled = True
        self.output.value = wrap(f"<p><b>refused</b> ({escape(exc.code)}): {escape(str(exc))}</p>")

    def html(self) -> str:
        return wrap(f"<p><b>RecordActions</b> {escape(self.id)}</p>") + self.output.value

    def __repr__(self) -> str:
        return f"<RecordActions {self.id}: {self.action.value}>"
