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

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from knowtk.engine.engine import Engine
from knowtk.query import TOOLS
from knowtk.query.args import validate
from knowtk.query.citations import EvidenceVerifier
from knowtk.results import Result
from knowtk.scan.changes import DEFAULT_MAX_FILES, ChangeSource
from knowtk.scan.entry import DEFAULT_MAX_FILE_BYTES
from knowtk.write import journal

if TYPE_CHECKING:
    import pandas as pd

    from knowtk.snapshot.model import Snapshot

# The write code, explain, diff, crash recovery and the tools' Python methods are imported where they are used:
# a query process imports the journal alone (to mark receipts indexed and to see whether a mutation is
# unfinished), and a command line never builds a method (inspect costs every process that imports it).

__all__ = ["Store", "open_store"]


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
) -> Store:
    """Open the store at ``path``; its state goes to ``path/.knowtk/`` unless ``state_dir`` says otherwise.

    Use ``state_dir`` for a store you must not write into (a read-only or shared copy); a state
    serves one store. ``accept_safeguard_loss=True`` opens a state whose safeguards were lost
    (knowtk refuses it otherwise, with a ``StateError`` saying what was lost); ``rebind_state=True``
    takes over a state made for a store at another path (the store was moved). Each query
    learns what changed from inotify on Linux and from a walk elsewhere (``Store.freshness_mode``);
    ``change_source=StatWalk`` forces the walk. ``profile`` reads Markdown written for another tool
    (``plain``, ``adr``, ``obsidian``; docs/profiles.md); by default knowtk.yaml's ``profile``, else ``knowtk``.
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
    ) -> None:
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
        self.engine.after_reconcile.append(lambda snap: journal.mark_reconciled(self.engine.state, snap))
        try:
            with self.engine.lock:
                unfinished = journal.intents(self.engine.state)
            if unfinished:  # a mutation a crash interrupted: finished or rolled back now
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
        """'inotify' when the OS tells each query what changed, 'walk' when each query stats every file."""
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
        return f"<Store {self.root!r}>"

    # -- state ---------------------------------------------------------------------------------
    def check(self) -> dict[str, Any]:
        """Check state.sqlite (``PRAGMA integrity_check``, safeguards against their journal, the scan cache,
        FTS5 ``integrity-check`` and rows, temporal tables, embeddings) and rebuild what is wrong.

        Returns ``{"ok": bool, "state": path, "integrity": [lines], "found": [...], "repaired": [...],
        "unrepaired": [...]}``; ``ok`` is True when nothing was found wrong.
        """
        return self.engine.check()

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
        self.engine.close()

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
        if spec.writes:  # outside a query's transaction: a mutation takes the write lock and writes files
            return Result(spec.name, run(self.engine, checked, self.verifier), checked)
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

    def preview(self, operation: str, id: str, **args: Any) -> dict[str, Any]:
        """What ``knowledge_mutation`` would do with these arguments (snake_case, as the methods take them), refused
        the same way but writing nothing: ``{"records": [{id, path, sha256Before, diff}], "safeguards", "lifts",
        "changes"}``. The notebook's confirm step shows it."""
        from knowtk.write.mutation import preview

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
        return Result("knowledge_mutation", answer, args)

    def diff(self, id: str, a: str | None = None, b: str | None = None) -> str:
        """A unified diff of record ``id`` between two kept versions (SHA-256, a prefix, or a receipt id);
        by default from the oldest version a receipt saw to the file now."""
        from knowtk.write.history import diff

        return diff(self.engine, id, a, b)

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
