"""The model downloader against a local hub that breaks connections, ignores ranges, corrupts
bytes and fails: what arrives is exactly the file or nothing, and a broken download resumes."""

from __future__ import annotations

import hashlib
import os
import threading
from collections import namedtuple
from pathlib import Path

import pytest
from memtray.core.llm import download
from memtray.core.llm.download import (
    Cancelled,
    ChecksumMismatch,
    DownloadBusy,
    DownloadError,
    NotEnoughSpace,
    Progress,
    fetch,
    part_path,
)

from tests.fixtures.model_hub import Hub, serve

DATA = os.urandom(3 * download.CHUNK + 12345)
SHA = hashlib.sha256(DATA).hexdigest()
NAME = "Tiny-Instruct.Q4_K_M.gguf"


@pytest.fixture
def hub() -> Hub:
    with serve({NAME: DATA}) as h:
        yield h  # type: ignore[misc]


def url(hub: Hub) -> str:
    return f"{hub.base_url}/someone/Tiny-GGUF/resolve/main/{NAME}"


def get(hub: Hub, dest: Path, **kw: object) -> download.Result:
    delays: list[float] = []
    kw.setdefault("sleep", delays.append)
    return fetch(url(hub), dest, size=len(DATA), sha256=SHA, **kw)  # type: ignore[arg-type]


def test_a_download_reports_progress_and_lands_complete(hub: Hub, tmp_path: Path) -> None:
    seen: list[Progress] = []
    dest = tmp_path / "models" / NAME
    result = get(hub, dest, progress=seen.append)
    assert dest.read_bytes() == DATA and not part_path(dest).exists()
    assert result.sha256 == SHA and result.resumed_from == 0 and result.fetched == len(DATA)
    assert [p.done for p in seen] == sorted(p.done for p in seen) and seen[-1].done == seen[-1].total == len(DATA)
    assert all(p.total == len(DATA) for p in seen)
    # the hub's redirect to its CDN was followed
    assert [s.path for s in hub.seen][:2] == [f"/someone/Tiny-GGUF/resolve/main/{NAME}", f"/cdn/{NAME}"]
    again = get(hub, dest)
    assert again.already and len(hub.downloads()) == 1  # checked, not fetched again


def test_a_broken_connection_is_resumed_where_it_stopped(hub: Hub, tmp_path: Path) -> None:
    hub.cut_at = len(DATA) // 3
    dest = tmp_path / NAME
    delays: list[float] = []
    result = get(hub, dest, sleep=delays.append)
    assert dest.read_bytes() == DATA
    ranges = [s.range for s in hub.downloads()]
    assert ranges[0] is None and ranges[1] == f"bytes={len(DATA) // 3}-", ranges
    assert result.attempts == 2 and len(delays) == 1


def test_a_stopped_download_keeps_its_part_and_the_next_one_continues_it(hub: Hub, tmp_path: Path) -> None:
    dest = tmp_path / NAME
    stop = threading.Event()

    def progress(p: Progress) -> None:
        if p.done > 0:  # the first report: stopped part of the way
            stop.set()

    with pytest.raises(Cancelled) as info:
        get(hub, dest, progress=progress, cancel=stop)
    assert info.value.exit_code == 130 and "kept" in str(info.value)
    have = part_path(dest).stat().st_size
    assert 0 < have < len(DATA) and not dest.exists()
    assert part_path(dest).read_bytes() == DATA[:have]
    result = get(hub, dest)
    assert result.resumed_from == have and result.fetched == len(DATA) - have
    assert dest.read_bytes() == DATA and hub.downloads()[-1].range == f"bytes={have}-"


def test_a_corrupt_file_is_refused_and_removed(hub: Hub, tmp_path: Path) -> None:
    hub.corrupt = True
    dest = tmp_path / NAME
    with pytest.raises(ChecksumMismatch) as info:
        get(hub, dest)
    assert "does not match its checksum" in str(info.value) and "removed" in info.value.hint
    assert not dest.exists() and not part_path(dest).exists()


def test_a_corrupt_part_from_before_is_caught_by_the_checksum(hub: Hub, tmp_path: Path) -> None:
    dest = tmp_path / NAME
    part_path(dest).write_bytes(b"\0" * 1000)  # not the file's first bytes
    with pytest.raises(ChecksumMismatch):
        get(hub, dest)
    assert not part_path(dest).exists()
    assert get(hub, dest).resumed_from == 0 and dest.read_bytes() == DATA


def test_a_server_that_ignores_the_range_is_read_from_the_start(hub: Hub, tmp_path: Path) -> None:
    dest = tmp_path / NAME
    part_path(dest).write_bytes(DATA[:5000])
    hub.ignore_range = True
    result = get(hub, dest)
    assert hub.downloads()[0].range == "bytes=5000-"  # asked to continue; the server sent it all
    assert dest.read_bytes() == DATA and result.fetched == len(DATA) and result.resumed_from == 0


def test_not_enough_space_is_said_before_anything_is_fetched(hub: Hub, tmp_path: Path) -> None:
    Usage = namedtuple("Usage", "total used free")
    with pytest.raises(NotEnoughSpace) as info:
        get(hub, tmp_path / NAME, disk_usage=lambda _p: Usage(10**9, 10**9 - 1000, 1000))
    assert "needs" in str(info.value) and "free" in str(info.value)
    assert hub.seen == []


def test_a_missing_file_is_a_clear_error_without_retries(hub: Hub, tmp_path: Path) -> None:
    with pytest.raises(DownloadError) as info:
        fetch(f"{hub.base_url}/cdn/nothing.gguf", tmp_path / NAME, size=len(DATA), sha256=SHA, sleep=lambda _s: None)
    assert "not found (HTTP 404)" in str(info.value) and len(hub.seen) == 1


def test_a_failing_server_is_retried_a_bounded_number_of_times(hub: Hub, tmp_path: Path) -> None:
    hub.fail = [503] * 3
    delays: list[float] = []
    assert get(hub, tmp_path / NAME, sleep=delays.append).size == len(DATA)
    assert delays == [1.0, 2.0, 4.0]
    hub.fail = [500] * 10
    with pytest.raises(DownloadError) as info:
        get(hub, tmp_path / "other" / NAME, retries=3)
    assert "3 times in a row" in str(info.value) and "HTTP 500" in str(info.value)


def test_a_file_of_another_size_is_not_used(tmp_path: Path) -> None:
    with serve({NAME: DATA + b"more"}) as hub, pytest.raises(DownloadError) as info:
        get(hub, tmp_path / NAME)
    assert "not the" in str(info.value) and not (tmp_path / NAME).exists()


def test_two_downloads_of_one_file_never_write_it_together(hub: Hub, tmp_path: Path) -> None:
    hub.stall_at = download.CHUNK
    dest = tmp_path / NAME
    stop = threading.Event()
    ended: list[BaseException] = []

    def run() -> None:
        try:
            get(hub, dest, cancel=stop)
        except DownloadError as exc:
            ended.append(exc)

    first = threading.Thread(target=run, daemon=True)
    first.start()
    while not part_path(dest).exists() or part_path(dest).stat().st_size == 0:
        first.join(0.01)
        assert first.is_alive()
    with pytest.raises(DownloadBusy):
        get(hub, dest)
    stop.set()
    hub.release.set()
    first.join(30)
    assert not first.is_alive() and [type(e) for e in ended] == [Cancelled]


def test_the_unreachable_hub_is_named(tmp_path: Path) -> None:
    with pytest.raises(DownloadError) as info:
        fetch("http://127.0.0.1:9/x.gguf", tmp_path / NAME, size=10, sha256=SHA, retries=2, sleep=lambda _s: None)
    assert "refused" in str(info.value) and "2 times in a row" in str(info.value)
