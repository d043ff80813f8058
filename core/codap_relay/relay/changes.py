"""Change marks: the plugin says what changed in the CODAP document; watchers (MCP subscriptions) read the marks
and are woken in this process."""

from __future__ import annotations

from ..notify import Notifier, changes_key
from ..records import ChangeMarks
from ..settings import Settings
from .sessions import Sessions
from .store_io import StoreIO


class DocumentChanges:
    def __init__(self, settings: Settings, store_io: StoreIO, *, sessions: Sessions, notifier: Notifier) -> None:
        self.settings = settings
        self.store_io = store_io
        self.store = store_io.store
        self.sessions = sessions
        self.notifier = notifier

    async def note(
        self, code: str, token: str | None, *, datasets: list[str], listed: bool, client: str | None = None
    ) -> ChangeMarks:
        """The plugin heard CODAP say the document changed: record it for watchers (the MCP subscriptions of a
        long-lived server) and wake those in this process. ``listed``: datasets or components came or went."""
        session = await self.sessions.for_plugin(code, token, client=client)
        marks = (["list"] if listed else []) + [f"dataset:{name}" for name in dict.fromkeys(datasets)]
        noted = await self.store_io.run(
            self.store.note_changes, code, marks, session.expires_at + self.settings.session_ttl_seconds
        )
        self.notifier.notify(changes_key(code))
        return noted

    async def get(self, code: str) -> ChangeMarks | None:
        return await self.store_io.read(self.store.get_changes, code)
