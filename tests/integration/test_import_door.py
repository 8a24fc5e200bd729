"""An import goes through the one door: what it refuses is quarantined and said, the rest goes on."""

from __future__ import annotations

from memtray.core.app import App
from memtray.core.base.clock import IdGenerator
from memtray.core.base.config import Config
from memtray.core.base.home import Home
from memtray.core.log.door import Door, Quarantine
from memtray.core.log.validate import Limits
from memtray.core.migrate.common import Importer, Item


def test_a_refused_message_is_quarantined_and_the_rest_of_the_import_goes_on(home: Home) -> None:
    app = App.open(home, config=Config(model="openai/m"), start_services=False)
    try:
        quarantine = Quarantine(home.root, app.clock)
        imp = Importer(app.store, app.memory, "chatgpt", "export.json", dry_run=False, new_id=IdGenerator(app.clock).new,
                       quarantine=quarantine, door=Door(limits=Limits(string_chars=80)), call=app.worker.call)
        summary = imp.run([Item("c1", "conversation", messages=[
            ("user", "short and fine", None), ("assistant", "x" * 500, None), ("user", "also fine", None)])])
        said = [r.data["content"] for r in app.store.log.records() if r.type == "message"]
        assert said == ["short and fine", "also fine"]
        assert [r.data["key"] for r in app.store.log.records() if r.type == "import.item"] == ["c1"]
        assert summary.notes == ["c1 message 2: refused (data.content: a text of 500 characters (at most 80)); "
                                 "kept in the quarantine, see `memtray doctor`"]
        (entry,) = quarantine.entries()
        assert entry["source"] == {"kind": "import", "name": "chatgpt", "where": "c1 message 2"}
    finally:
        app.close()
