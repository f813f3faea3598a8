"""``Store``: the Python surface of one knowledge store.

``open_store(path)`` gives a ``Store``. ``Store.call(tool, args)`` takes the
contract's tool names and camelCase arguments and returns the contract's
dict; every tool is also a method (``grep``, ``lookup``, ``records``, ``record``, …,
made from the registry: ``knowtk.methods``) that takes the same arguments in snake_case,
keyword-only after the first, and returns a ``Result`` (``.to_dict()`` is that same dict,
``.to_frame()`` a DataFrame).
Every call scans the store first. Only the write methods (``create``, ``update``, ``supersede``,
``withdraw``, ``reinstate``: ``knowledge_mutation``, docs/mutations.md) write Markdown files.

A ``Store`` may be shared by threads: each call runs whole under the store's
lock, inside one transaction of its state (docs/reliability.md).
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from knowtk.engine.engine import Engine
from knowtk.errors import InvalidArgument, KnowtkError, PastIsReadOnly, RecordNotFound, StoreUnavailable
from knowtk.model.datevalues import format_utc, parse_instant
from knowtk.query import TOOLS
from knowtk.query.args import BOUND_PATTERN, spelled_for, validate
from knowtk.query.citations import EvidenceVerifier
from knowtk.results import Result
from knowtk.scan.changes import DEFAULT_MAX_FILES, ChangeSource
from knowtk.scan.entry import DEFAULT_MAX_FILE_BYTES
from knowtk.write import journal
from knowtk.write.seen import SeenKeeper, check_seen

if TYPE_CHECKING:
    import pandas as pd

    from knowtk.snapshot.model import Snapshot
    from knowtk.write.past import PastFiles

# The write code, explain, diff, crash recovery and the tools' Python methods are imported where they are used:
# a query process imports the journal alone (to mark receipts indexed and to see whether a mutation is
# unfinished), and a command line never builds a method (inspect costs every process that imports it).

__all__ = ["PastStore", "Store", "open_store"]

PERIOD_ENDS = {"D": "D", "W": "W-SUN", "M": "ME", "Q": "QE", "Y": "YE"}  # lifecycle_over_time's steps (pandas)
MAX_STEPS = 1000  # steps of lifecycle_over_time at most: each may be a past store read whole


def open_store(
    path: str | os.PathLike[str],
    *,
    state_dir: str | os.PathLike[str] | None = None,
    change_source: ChangeSource | type | None = None,
    max_files: int = DEFAULT_MAX_FILES,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    accept_safeguard_loss: bool = False,
    rebind_state: bool = False,
    profile: str | None = None,
    read_only: bool = False,
) -> Store:
    """Open the store at ``path``; its state goes to ``path/.knowtk/`` unless ``state_dir`` says otherwise.

    Use ``state_dir`` for a store you must not write into (a read-only or shared copy); a state
    serves one store. ``accept_safeguard_loss=True`` opens a state whose safeguards were lost
    (knowtk refuses it otherwise, with a ``StateError`` saying what was lost); ``rebind_state=True``
    takes over a state made for a store at another path (the store was moved). Each query
    learns what changed from inotify on Linux and from a walk elsewhere (``Store.freshness_mode``);
    ``change_source=StatWalk`` forces the walk. ``profile`` reads Markdown written for another tool
    (``plain``, ``adr``, ``obsidian``; docs/profiles.md); by default knowtk.yaml's ``profile``, else ``knowtk``.
    ``read_only=True`` refuses every change of a Markdown file (``create``, ``update``, ``supersede``,
    ``withdraw``, ``reinstate``, ``undo``, ``preview``, ``adopt``: ``StoreUnavailable``) and the notebook widgets
    offer no change action; open a copy to change it (docs/notebooks.md).
    """
    return Store(
        path,
        state_dir=state_dir,
        change_source=change_source,
        max_files=max_files,
        max_file_bytes=max_file_bytes,
        accept_safeguard_loss=accept_safeguard_loss,
        rebind_state=rebind_state,
        profile=profile,
        read_only=read_only,
    )


class Store:
    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        state_dir: str | os.PathLike[str] | None = None,
        change_source: ChangeSource | type | None = None,
        max_files: int = DEFAULT_MAX_FILES,
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        accept_safeguard_loss: bool = False,
        rebind_state: bool = False,
        profile: str | None = None,
        read_only: bool = False,
    ) -> None:
        #: True: every write method raises StoreUnavailable, and the widgets hide their change actions
        self.read_only = bool(read_only)
        self.engine = Engine(
            path,
            state_dir=state_dir,
            change_source=change_source,
            max_files=max_files,
            max_file_bytes=max_file_bytes,
            accept_safeguard_loss=accept_safeguard_loss,
            rebind_state=rebind_state,
            profile=profile,
        )
        self.verifier = EvidenceVerifier(self.engine.root)
        #: keeps every revision of the files the scans see, with the instant first seen (docs/time.md)
        self.seen = SeenKeeper(self.engine)
        self.engine.observer = self.seen
        self._past: dict[str, tuple[Engine, EvidenceVerifier]] = {}  # the past stores opened, by their tree
        self._past_lock = threading.Lock()
        self.engine.after_reconcile.append(lambda snap: journal.mark_reconciled(self.engine.state, snap))
        try:
            with self.engine.lock:
                unfinished = journal.intents(self.engine.state)
            if unfinished and not self.read_only:  # a mutation a crash interrupted: finished or rolled back now
                from knowtk.write.mutation import recover

                recover(self.engine)
        except BaseException:
            self.engine.close()
            raise

    @property
    def root(self) -> str:
        return self.engine.root

    @property
    def name(self) -> str:
        return self.engine.snapshot().config.name

    @property
    def state_path(self) -> str:
        return self.engine.state_path

    @property
    def freshness_mode(self) -> str:
        """'inotify' when the OS tells each query what changed, 'walk' when each query stats every file, 'settled'
        for a view of the past (``at``): its files, written once, are walked by its first query only."""
        return self.engine.freshness_mode

    def snapshot(self) -> Snapshot:
        """Scan now and return the store as a query would see it."""
        return self.engine.snapshot()

    def export(self, path: str | os.PathLike[str], format: str = "parquet") -> dict[str, str]:
        """Write the snapshot's tables into the folder ``path`` for DuckDB, Spark or pandas.

        One file per table (``records``, ``dates``, ``chains``, ``coverage_issues``; see
        ``knowtk.export``), all from one snapshot taken now, each row naming the store. Needs
        pyarrow (``pip install knowtk[export]``). Returns ``{table: file written}``.
        """
        from knowtk.export import export_snapshot  # imported when used: a query process never needs it

        snap = self.engine.snapshot()
        written = export_snapshot(snap, snap.config.name, path, format)
        return {name: str(file) for name, file in written.items()}

    def __repr__(self) -> str:
        return f"<Store {self.root!r}{' read-only' if self.read_only else ''}>"

    def refuse_writes(self, what: str) -> None:
        """``StoreUnavailable`` when the store was opened with ``read_only=True``; ``what`` names the change."""
        if self.read_only:
            raise StoreUnavailable(
                self.root,
                f"{what} refused: the store was opened read-only (open_store(..., read_only=True)); "
                "open a copy of it to change files",
            )

    # -- state ---------------------------------------------------------------------------------
    def check(self) -> dict[str, Any]:
        """Check state.sqlite (``PRAGMA integrity_check``, safeguards against their journal, the scan cache,
        FTS5 ``integrity-check`` and rows, temporal tables, embeddings) and rebuild what is wrong.

        Returns ``{"ok": bool, "state": path, "integrity": [lines], "found": [...], "repaired": [...],
        "unrepaired": [...]}``; ``ok`` is True when nothing was found wrong. The past files ``at`` kept are
        compared with their trees too; a folder that differs is removed (written again when asked), and the views
        of the past open until then are closed. The record of what knowtk saw (``seen.git``) is checked with
        ``git fsck``: a damaged one is moved aside and started again from the files as they are.
        """
        from knowtk.write.past import PAST_DIR, check_past  # imported when used: a query never reads Git

        report = self.engine.check()
        if os.path.isdir(os.path.join(os.path.dirname(self.state_path), PAST_DIR)):
            with self._past_lock:  # the views read the folders checked: closed first, opened again when asked
                for engine, _ in self._past.values():
                    engine.close()
                self._past.clear()
                found, repaired = check_past(self.root, os.path.dirname(self.state_path))
            report["found"] += found
            report["repaired"] += repaired
            report["ok"] = report["ok"] and not found
        seen = check_seen(self.seen)
        for key in ("found", "repaired", "unrepaired"):
            report[key] += seen[key]
        report["ok"] = report["ok"] and not seen["found"]
        return report

    def keep_written(self) -> None:
        """Scan now, so that what a write changed is kept as seen at its instant (``seen``), not at the next query."""
        with contextlib.suppress(KnowtkError):  # the write is done and answered: the next query's scan keeps it
            self.engine.snapshot()

    def accept_safeguard_loss(self) -> dict[str, Any]:
        """Accept a loss of safeguards that knowtk refused (a ``StateError`` said what was lost).

        The journal is written anew from what the state still holds; queries answer again, without
        the lost withdrawals and supersession guards. Returns ``{"accepted": what was lost (None if
        nothing was), "withdrawals": n, "guards": n}`` (the safeguards kept).
        """
        with self.engine.lock:
            self.engine.ensure_open()
            return self.engine.safeguards.accept_loss()

    def close(self) -> None:
        """Close the store, and the views of its past that ``at`` opened."""
        with self._past_lock:
            for engine, _ in self._past.values():
                engine.close()
            self._past.clear()
        self.engine.close()

    # -- known time: the store as its files stood at an instant ----------------------------------
    def at(self, when: str, *, argument: str = "when") -> PastStore:
        """The store as its files stood at ``when`` (a timestamp with seconds and an explicit offset, or a date:
        the end of that UTC day), read-only: every read tool, method, frame and widget works on it, and each
        answer carries ``knownAt`` (the instant and the commit or observation it stands on). A write raises
        ``PastIsReadOnly``.

        The past comes from Git, when the store lies in a Git work tree (its folder in the last commit of HEAD's
        first-parent line committed at or before ``when``), and from what knowtk saw (every revision its scans
        observed, with the instant first seen): the newer of the two wins (docs/time.md). ``NoKnownPast`` (naming
        the earliest instant known) before that; ``InvalidArgument`` (naming ``argument``) for an instant that is no
        date, or still to come. The past files are kept in the state folder (``past/``); the view stays open until
        this store closes.
        """
        from knowtk.write.past import open_past, past_files  # imported when used: a query never reads Git

        files = past_files(self.root, os.path.dirname(self.state_path), parse_instant(argument, when))
        with self._past_lock:
            self.engine.ensure_open()
            opened = self._past.get(files.tree)
            if opened is None or opened[0].closed:
                engine = open_past(self.engine, files)
                opened = self._past[files.tree] = (engine, EvidenceVerifier(engine.root))
        return PastStore(self, opened[0], opened[1], files)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the contract's entry point ----------------------------------------------------------
    def call(self, tool: str, args: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Run a tool by its contract name with camelCase arguments; returns the contract's dict."""
        return self._run(tool, args, python=False).to_dict()

    def _run(self, tool: str, args: Mapping[str, Any] | None, *, python: bool) -> Result:
        spec = TOOLS.lookup(tool)
        checked = validate(spec.name, spec.params, args, python=python)
        run = spec.runner()
        if spec.destructive:
            self.refuse_writes(f"{spec.name} ({checked.get('operation', 'a change')})")
        with spelled_for(spec.params, python=python):
            if spec.writes:  # outside a query's transaction: a mutation takes the write lock and writes files
                answer = run(self.engine, checked, self.verifier)
                self.keep_written()
                return Result(spec.name, answer, checked)
            return Result(spec.name, self.engine.run(lambda: run(self.engine, checked, self.verifier)), checked)

    def invoke(self, tool: str, arguments: Mapping[str, Any]) -> Result:
        """Run a tool with its arguments in snake_case, as its method takes them (None: the default)."""
        return self._run(tool, {k: v for k, v in arguments.items() if v is not None}, python=True)

    def _method(self, tool: str, given: dict[str, Any]) -> Result:
        return self.invoke(tool, {k: v for k, v in given.items() if k != "self"})

    # -- every tool as a method: store.grep(...), store.records(...), a plug-in's too -------------
    def __getattr__(self, name: str) -> Callable[..., Result]:
        """A tool's method (``Tool.method_name``): its arguments in snake_case, those the command line takes by
        position first, the rest keyword-only; it returns a ``Result``."""
        tool = None if name.startswith("_") else TOOLS.by_method(name)
        if tool is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        from knowtk.methods import tool_method

        return tool_method(self, tool)

    def __dir__(self) -> list[str]:
        methods = [tool.method_name for tool in TOOLS.values() if tool.method_name]
        return sorted({*super().__dir__(), *methods})

    # -- why a record is (not) in a search -----------------------------------------------------
    def explain(
        self,
        id: str,
        *,
        query: str | None = None,
        mode: str = "all",
        kind: str | list[str] | None = None,
        type: str | list[str] | None = None,
        tag: str | list[str] | None = None,
        lifecycle: str = "active",
        time_field: str | None = None,
        since: str | None = None,
        until: str | None = None,
        scope: str | list[str] | None = None,
        limit: int = 20,
    ) -> dict[str, Any]:
        """Why record ``id`` is (not) in ``grep(query, ...)``: hit, replacement, not matched, or the rule excluding it.

        Returns a plain dict; its keys are documented in ``knowtk.query.explain.explain``.
        """
        args = {k: v for k, v in locals().items() if k not in ("self", "id", "query") and v is not None}
        from knowtk.query.explain import explain  # after locals() was read: imported when used

        return self.engine.run(lambda: explain(self, id, query=query, **args))

    # -- changing the store (knowledge_mutation) and its history ---------------------------------
    def create(
        self,
        id: str,
        record: dict[str, Any],
        *,
        path: str | None = None,
        actor: str | None = None,
        checkpoint: bool = False,
    ) -> Result:
        """Create record ``id`` from ``record`` (its fields, ``body`` the Markdown body); IdentityConflict if the id
        exists. ``path`` defaults to the type's folder. Returns the receipt (docs/mutations.md)."""
        return self._method("knowledge_mutation", {"operation": "create", **locals()})

    def update(
        self,
        id: str,
        record: dict[str, Any],
        *,
        expected_sha256: str,
        restate: bool = False,
        actor: str | None = None,
        checkpoint: bool = False,
    ) -> Result:
        """Set the fields in ``record`` (None removes one; ``body`` replaces the body), keeping every other byte.
        ``restate=True`` raises the revision. PublicationConflict when the file is not at ``expected_sha256``."""
        return self._method("knowledge_mutation", {"operation": "update", **locals()})

    def supersede(
        self,
        id: str,
        *,
        by: str,
        expected_sha256: str,
        record: dict[str, Any] | None = None,
        path: str | None = None,
        actor: str | None = None,
        checkpoint: bool = False,
    ) -> Result:
        """Mark ``id`` superseded by ``by``: an active record, or one created from ``record`` in the same step."""
        return self._method("knowledge_mutation", {"operation": "supersede", **locals()})

    def withdraw(
        self, id: str, *, reason: str, expected_sha256: str, actor: str | None = None, checkpoint: bool = False
    ) -> Result:
        """Withdraw ``id`` (the file stays, with ``status: withdrawn``); its safeguard is recorded first."""
        return self._method("knowledge_mutation", {"operation": "withdraw", **locals()})

    def reinstate(
        self, id: str, *, reason: str, expected_sha256: str, actor: str | None = None, checkpoint: bool = False
    ) -> Result:
        """Make ``id`` active again, lifting its withdrawal or supersession safeguard: the only way to lift one."""
        return self._method("knowledge_mutation", {"operation": "reinstate", **locals()})

    def undo(
        self,
        receipt: str | Mapping[str, Any],
        *,
        expected_sha256: str | None = None,
        reason: str | None = None,
        actor: str | None = None,
        checkpoint: bool = False,
    ) -> Result:
        """Undo a change: every file ``receipt`` wrote back to its bytes before (a file it created removed), the
        safeguards as those bytes say, judged and conflict-checked like every change (``PublicationConflict`` when a
        file is no longer as the receipt left it). ``receipt``: its id, the receipt dict, or the ``Result`` of the
        change. ``expected_sha256``: the hash you read, for a receipt of one file. Leaves its own receipt (operation
        ``undo``), which can be undone in turn (docs/mutations.md, Undo)."""
        from knowtk.write.undo import undo_receipt

        rid = _receipt_id(receipt)
        self.refuse_writes(f"undo of {rid}")
        answer = undo_receipt(
            self.engine, rid, expected_sha256=expected_sha256, reason=reason, actor=actor, checkpoint=checkpoint
        )
        self.keep_written()
        return Result("knowledge_mutation", answer, {"operation": "undo", "receipt": rid})

    def preview(self, operation: str, id: str, **args: Any) -> dict[str, Any]:
        """What ``knowledge_mutation`` would do with these arguments (snake_case, as the methods take them), refused
        the same way but writing nothing: ``{"records": [{id, path, sha256Before, diff}], "safeguards", "lifts",
        "changes"}``. The notebook's confirm step shows it."""
        from knowtk.write.mutation import preview

        self.refuse_writes(f"a preview of {operation}")
        given = {"operation": operation, "id": id, **{k: v for k, v in args.items() if v is not None}}
        checked = validate("knowledge_mutation", TOOLS["knowledge_mutation"].params, given, python=True)
        return preview(self.engine, checked)

    def adopt(
        self,
        *,
        profile: str | None = None,
        dry_run: bool = False,
        skip_issues: bool = False,
        expect: str | None = None,
        undo: str | None = None,
        actor: str | None = None,
        checkpoint: bool | None = None,
    ) -> Result:
        """Write the keys the store's profile derived into each file's frontmatter, so that the folder reads the
        same under knowtk's own format (docs/profiles.md, Adopt). ``dry_run`` writes nothing and returns
        ``diff``, the unified diff of every file, and ``plan``: pass it as ``expect`` to write exactly that
        (``PublicationConflict`` if the files changed since). Files with coverage issues refuse it unless
        ``skip_issues``.
        ``undo=RECEIPT`` puts back the files of an adopt receipt (only if each is still as it left it).
        ``profile`` must be the one the store is open with. The answer: ``{"receipt", "written", "dryRun",
        "plan", "skipped": [{path, id, reason}], "note", "diff"?}``; ``to_frame()`` has a row per file."""
        from knowtk.write.adopt import adopt, undo_adopt  # imported when used: a query process never needs it

        args = {"profile": profile, "dry_run": dry_run, "skip_issues": skip_issues, "expect": expect, "undo": undo}
        if not dry_run:
            self.refuse_writes("adopt")
        if undo is not None:
            answer = undo_adopt(self.engine, undo, dry_run=dry_run, actor=actor, checkpoint=bool(checkpoint))
        else:
            answer = adopt(
                self.engine,
                profile=profile,
                dry_run=dry_run,
                skip_issues=skip_issues,
                expect=expect,
                actor=actor,
                checkpoint=bool(checkpoint),
            )
        if not dry_run:
            self.keep_written()
        return Result("knowledge_mutation", answer, args)

    def diff(self, id: str, a: str | None = None, b: str | None = None) -> str:
        """A unified diff of record ``id`` between two kept versions (SHA-256, a prefix, or a receipt id, or an
        instant: the file as it stood then, as ``at`` reads it); by default from the oldest version a receipt saw
        to the file now."""
        if any(isinstance(ref, str) and re.fullmatch(BOUND_PATTERN, ref) for ref in (a, b)):
            return self.diff_at(id, a, b)
        from knowtk.write.history import diff

        return diff(self.engine, id, a, b)

    def lifecycle_over_time(self, freq: str = "M", *, since: str | None = None, until: str | None = None) -> Any:
        """Active, superseded and withdrawn records at the end of each day, week, month, quarter or year
        (``freq``: D, W, M, Q, Y) from ``since`` (default: the earliest instant known) to ``until`` (default:
        now), as the store's files stood then (``at``): a DataFrame with ``at`` (UTC), the three counts,
        ``total`` and ``commit``. ``knowtk.notebook.plot_lifecycle_over_time`` draws it on a date axis.
        Each distinct past is read once (kept in the state folder); a long history costs one build per commit
        asked."""
        import pandas as pd  # imported when used: the command line never needs it

        from knowtk.write.past import earliest_known

        if freq not in PERIOD_ENDS:
            raise InvalidArgument("freq", f"{freq!r} is no step", allowed=list(PERIOD_ENDS), value=freq)
        earliest = earliest_known(self.root, os.path.dirname(self.state_path))
        start = parse_instant("since", since if since is not None else earliest or "0001-01-01")
        end = parse_instant("until", until) if until is not None else datetime.now(UTC)
        if start > end:
            raise InvalidArgument("since", "lies after until", allowed="an instant at or before until", value=since)
        ends = pd.date_range(start.date(), end.date(), freq=PERIOD_ENDS[freq])
        if len(ends) > MAX_STEPS:
            raise InvalidArgument("freq", f"makes {len(ends)} steps", allowed=f"at most {MAX_STEPS}", value=freq)
        asked = [format_utc(start), *(d.date().isoformat() for d in ends if start.date() <= d.date() < end.date())]
        rows = [self.lifecycle_counts(when) for when in [*asked, format_utc(end)]]
        frame = pd.DataFrame(rows, columns=["at", "active", "superseded", "withdrawn", "total", "commit"])
        frame["at"] = pd.to_datetime(frame["at"], utc=True, format="ISO8601")
        return frame

    def lifecycle_counts(self, when: str) -> dict[str, Any]:
        """The store at ``when``: ``{at, active, superseded, withdrawn, total, commit}``."""
        past = self.at(when)
        snap = past.snapshot()
        lifecycle = snap.lifecycle  # (every record has its lifecycle there: a stored snapshot's are not built to count)
        counts = Counter(lifecycle[rid] for rid in snap.records)
        lifecycles = {name: counts.get(name, 0) for name in ("active", "superseded", "withdrawn")}
        return {
            "at": past.known_at["instant"],
            **lifecycles,
            "total": len(snap.records),
            "commit": past.files.commit.sha,
        }

    def diff_at(self, id: str, a: str | None, b: str | None) -> str:
        """A unified diff of record ``id`` between the store at instant ``a`` and at ``b`` (None: now), each side
        the record's file as it stood then (nothing where the record was not)."""
        import difflib  # imported when used: a query process never diffs (tests/test_lean_process.py)

        sides = []
        for name, when in (("a", a), ("b", b)):
            store = self if when is None else self.at(when, argument=name)
            record = store.snapshot().records.get(id)
            stamp = store.known_at["instant"] if isinstance(store, PastStore) else "now"
            if record is None:
                sides.append((f"{id} ({stamp}: no such record)", ""))
                continue
            with open(os.path.join(store.root, *record.path.split("/")), "rb") as f:
                sides.append((f"{record.path} ({stamp})", f.read().decode("utf-8", "replace")))
        if not sides[0][1] and not sides[1][1]:
            raise RecordNotFound(id, f"{id!r} is a record at neither instant")
        (old_name, old), (new_name, new) = sides
        return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), old_name, new_name))

    # -- what was in force when ---------------------------------------------------------------------
    def in_force(
        self,
        *,
        type: str | list[str] | None = None,
        tag: str | list[str] | None = None,
        scope: str | list[str] | None = None,
        valid_at: str | None = None,
    ) -> pd.DataFrame:
        """The records of these types (with their aliases) and tags, one row each with its span of validity:
        ``start`` and ``end`` (``validAt``'s rule, docs/time.md), why it ended, what superseded it, and, with
        ``valid_at``, its lifecycle then and whether it was in force. ``knowtk.notebook.plot_in_force`` draws it.
        """
        from knowtk.frames import build_frame
        from knowtk.query.args import strings
        from knowtk.query.in_force import IN_FORCE_COLUMNS, in_force_rows
        from knowtk.query.validity import valid_at as valid_at_check

        when = None if valid_at is None else valid_at_check("valid_at", valid_at)
        asked_types = None if type is None else strings()("type", type)
        tags = None if tag is None else strings()("tag", tag)

        def rows() -> list[dict[str, Any]]:
            snap = self.engine.snapshot()
            types = None
            if asked_types is not None:
                types = frozenset(t for asked in asked_types for t in snap.config.expand_type(asked))
            return in_force_rows(snap, types=types, tags=tags, scope=snap.normalize_scope(scope), when=when)

        return build_frame(self.engine.run(rows), IN_FORCE_COLUMNS)


class PastStore(Store):
    """The store as its files stood at an instant (``Store.at``): it reads as any store, and writes nothing.

    Every answer carries ``knownAt``: ``{instant, source: "git", commit, committedAt}``, or ``{instant, source:
    "seen", observation, seenAt}`` when it stands on what knowtk saw. It shares its engine with the
    other views of the same past files and is closed with the store it came from (``close`` does nothing).
    """

    def __init__(self, present: Store, engine: Engine, verifier: EvidenceVerifier, files: PastFiles) -> None:
        # no Store.__init__: the engine is open already, and a past state has no receipts to recover
        self.present = present
        self.engine = engine
        self.verifier = verifier
        self.files = files
        self.known_at = files.known_at()
        self.read_only = True

    def __repr__(self) -> str:
        return f"<Store {self.present.root!r} at {self.known_at['instant']} ({self.files.label})>"

    def refuse(self, what: str) -> PastIsReadOnly:
        return PastIsReadOnly(
            f"{what}: this is the store as it stood at {self.known_at['instant']} ({self.files.label}), "
            "a view of the past that nothing writes; ask the present store"
        )

    def _run(self, tool: str, args: Mapping[str, Any] | None, *, python: bool) -> Result:
        spec = TOOLS.lookup(tool)
        if spec.writes:
            raise self.refuse(spec.name)
        result = super()._run(tool, args, python=python)
        return Result(result.tool, {**result.to_dict(), "knownAt": self.known_at}, result.args)

    def at(self, when: str, *, argument: str = "when") -> PastStore:
        return self.present.at(when, argument=argument)

    def close(self) -> None:
        """Nothing: the view is closed with the store it came from."""

    def check(self) -> dict[str, Any]:
        """The view's own state checked and repaired (the present store's ``check`` checks its files)."""
        return self.engine.check()

    def accept_safeguard_loss(self) -> dict[str, Any]:
        raise self.refuse("accept_safeguard_loss")

    def preview(self, operation: str, id: str, **args: Any) -> dict[str, Any]:
        raise self.refuse(operation)

    def adopt(self, **args: Any) -> Result:
        raise self.refuse("adopt")

    def undo(self, receipt: str | Mapping[str, Any], **args: Any) -> Result:
        raise self.refuse("undo")

    def diff(self, id: str, a: str | None = None, b: str | None = None) -> str:
        """The present store's ``diff``: kept versions and instants are the store's, not of one instant."""
        return self.present.diff(id, a, b)


def _receipt_id(receipt: Any) -> str:
    """A receipt's id from the id itself, a receipt dict, or a change's answer (``{"receipt": {...}}``, a Result)."""
    if isinstance(receipt, str):
        return receipt
    if isinstance(receipt, Result):
        receipt = receipt.to_dict()
    if isinstance(receipt, Mapping):
        inner = receipt.get("receipt", receipt)
        if isinstance(inner, Mapping) and isinstance(inner.get("id"), str):
            return inner["id"]
    raise InvalidArgument("receipt", "give a receipt id (rcpt-...), a receipt, or the answer of a change")
