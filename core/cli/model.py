"""``memtray model``: offline models to download and use, and model servers on this computer.

``model list`` shows the catalogue (:mod:`memtray.core.llm.catalogue`) with each
model's size, its speed and memory here (:mod:`memtray.core.llm.estimate`) and
whether its consolidations are written or held for review
(:mod:`memtray.core.llm.capability`); ``model download ID`` fetches one with
progress on stderr, resuming an interrupted download and checking its sha256
(:mod:`memtray.core.llm.download`); ``model use`` makes it (or a model on a local
server, ``model servers``) the configured model. None of them needs the data
home's lock: a running instance picks up the new setting from config.toml.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from dataclasses import replace
from typing import Any

from memtray.core.base import config as cfgmod
from memtray.core.base.errors import MemtrayError
from memtray.core.base.home import Home
from memtray.core.cli.console import con, err, served_app
from memtray.core.cli.console import out as _out
from memtray.core.llm import capability, catalogue, localmodel, offer
from memtray.core.llm.catalogue import CatalogueModel
from memtray.core.llm.download import Cancelled, Progress, fetch, human_size, part_path


def add_commands(sub: Any) -> None:
    m = sub.add_parser("model", help="offline models to download, and model servers on this computer")
    ms = m.add_subparsers(dest="model_cmd", metavar="SUBCOMMAND", required=True)
    ls = ms.add_parser("list", help="the models memtray can download, with size and speed here")
    ls.add_argument("--json", action="store_true")
    ls.add_argument("--measure", action="store_true", help="measure this computer's speed again")
    ls.set_defaults(fn=cmd_list)
    dl = ms.add_parser("download", help="download a model (resumes; checks its sha256)")
    dl.add_argument("id")
    dl.add_argument("--json", action="store_true", help="print the result as JSON")
    dl.set_defaults(fn=cmd_download)
    use = ms.add_parser("use", help="make a downloaded model (or a server's model) the one memtray uses")
    use.add_argument("model", help="a catalogue id, or a litellm model string from `memtray model servers`")
    use.add_argument("--api-base", metavar="URL", help="the server's address (with a server's model)")
    use.set_defaults(fn=cmd_use)
    sv = ms.add_parser("servers", help="Ollama, llama.cpp or LM Studio running on this computer")
    sv.add_argument("--json", action="store_true")
    sv.set_defaults(fn=cmd_servers)
    rm = ms.add_parser("remove", help="delete a downloaded model (and a partial download)")
    rm.add_argument("id")
    rm.set_defaults(fn=cmd_remove)


# --- list -------------------------------------------------------------------------------


def cmd_list(args: argparse.Namespace, home: Home) -> int:
    found = offer.rows(home, cfgmod.load(home), measure=args.measure)
    if args.json:
        _out(json.dumps({"models": found, "models_dir": str(catalogue.models_dir(home.root))}))
        return 0
    _out(f"Offline models (run on this computer; files in {catalogue.models_dir(home.root)}):")
    for r in found:
        est = r["estimate"]
        state = ("in use" if r["in_use"] else "downloaded") if r["downloaded"] else (
            f"{human_size(r['partial'])} downloaded, run download to continue" if r["partial"] else "")
        memory = "writes memory" if r["writes_memory"] else "memory held for review"
        fits = "" if est["fits"] is not False else f", needs {human_size(est['ram_needed'])} RAM (more than here)"
        _out(f"  {r['id']:<22} {r['name']:<24} {human_size(r['size']):>8}  ~{_speed(est['tokens_per_second'])}"
             f"  {memory}{fits}" + (f"  [{state}]" if state else ""))
    basis = found[0]["estimate"]["basis"] if found else "rule"
    _out("Speed here: " + ("measured with the bundled SmolLM2 and scaled by file size" if basis == "measured"
                           else "a rule of thumb (the bundled model is not installed to measure with)")
         + f"; {os.cpu_count() or 1} CPUs.")
    _out("Download: `memtray model download ID`; then `memtray model use ID`. "
         "Model servers on this computer: `memtray model servers`.")
    return 0


def _speed(tps: float) -> str:
    return f"{tps:.0f} tokens/s" if tps >= 10 else f"{tps:.1f} tokens/s"


# --- download ---------------------------------------------------------------------------


def cmd_download(args: argparse.Namespace, home: Home) -> int:
    if served_app() is not None:
        raise MemtrayError("a download runs in the terminal, not inside the running instance",
                           hint="Run `memtray model download` directly.")
    m = catalogue.find(args.id)
    cfg = cfgmod.load(home)
    home.create()
    directory = catalogue.models_dir(home.root)
    dest = directory / m.file
    url = m.url(catalogue.hub(cfg.model_hub))
    bar = _Bar(m, quiet=args.json)
    started = time.monotonic()
    try:
        result = fetch(url, dest, size=m.size, sha256=m.sha256, progress=bar.show)
    except KeyboardInterrupt:
        bar.end()
        raise Cancelled(f"the download of {m.id} was stopped; what was fetched is kept") from None
    bar.end()
    took = time.monotonic() - started
    if args.json:
        _out(json.dumps({"id": m.id, "path": str(result.path), "size": result.size, "sha256": result.sha256,
                         "resumed_from": result.resumed_from, "fetched": result.fetched,
                         "already": result.already, "seconds": round(took, 1), "model": m.runs_as}))
        return 0
    if result.already:
        _out(f"{m.name} is already downloaded and checked: {result.path}")
    else:
        resumed = f", continued from {human_size(result.resumed_from)}" if result.resumed_from else ""
        _out(f"downloaded {m.name} ({human_size(result.size)}{resumed}), sha256 checked: {result.path}")
    _out(f"Use it: memtray model use {m.id}")
    return 0


class _Bar:
    """Progress on stderr: one line redrawn on a terminal, a line per tenth otherwise."""

    def __init__(self, m: CatalogueModel, *, quiet: bool) -> None:
        self.m = m
        self.quiet = quiet
        self.tty = _stderr_tty()
        self.last_tenth = -1
        self.drawn = False

    def show(self, p: Progress) -> None:
        if self.quiet:
            return
        eta = f", {_duration(p.eta)} left" if p.eta is not None and p.done < p.total else ""
        speed = f" at {human_size(p.speed)}/s" if p.speed else ""
        line = f"{self.m.id}: {human_size(p.done)} of {human_size(p.total)} ({p.fraction:.0%}){speed}{eta}"
        if self.tty:
            con().write_err("\r" + line.ljust(78))
            self.drawn = True
        elif int(p.fraction * 10) > self.last_tenth:
            self.last_tenth = int(p.fraction * 10)
            err(line)

    def end(self) -> None:
        if self.drawn:
            con().write_err("\n")
            self.drawn = False


def _stderr_tty() -> bool:
    if served_app() is not None:
        return False
    try:
        return sys.stderr.isatty()
    except ValueError:
        return False


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 90:
        return f"{seconds / 60:.0f} min"
    return f"{seconds:.0f} s"


# --- use, servers, remove ---------------------------------------------------------------


def cmd_use(args: argparse.Namespace, home: Home) -> int:
    spec = args.model.strip()
    api_base = (args.api_base or "").strip()
    entry = catalogue.lookup(spec)
    if entry is not None:
        if api_base:
            raise MemtrayError("--api-base is for a server's model; a catalogue model runs in memtray itself")
        if localmodel.resolve(entry.runs_as, catalogue.models_dir(home.root)) is None:
            raise MemtrayError(localmodel.not_found(entry.runs_as),
                               hint=f"Download it first: `memtray model download {entry.id}`.")
        model = entry.runs_as
    elif "/" in spec:
        model = spec
    else:
        raise catalogue.UnknownModel(f"{spec!r} is neither a catalogue id nor a litellm model string (provider/model)")
    cfg = cfgmod.load(home, env=False)
    new = replace(cfg, model=cfgmod.coerce("model", model), api_base=cfgmod.coerce("api_base", api_base))
    if api_base and not api_base.startswith(("http://", "https://")):
        raise MemtrayError(f"--api-base must be an http(s) address, not {api_base!r}")
    cfgmod.save(home, new)
    app = served_app()
    if app is not None:
        app.refresh_settings()
    _out(f"model = {model}" + (f", api_base = {api_base}" if api_base else ""))
    verdict = capability.judge(model, cfg.hold_consolidations)
    _out(f"memory: {'consolidations are written' if verdict.unattended else 'consolidations are held for your review'}"
         f" ({verdict.reason})")
    for name, var in cfgmod.ENV_OVERRIDES.items():
        if os.environ.get(var):
            err(f"memtray: note: {var} is set in this environment and overrides {name} for commands run here")
    return 0


def cmd_servers(args: argparse.Namespace, home: Home) -> int:
    from memtray.core.llm import servers

    found = servers.detect()
    if args.json:
        _out(json.dumps({"servers": [s.to_json() for s in found.servers], "problems": found.problems}))
        return 0
    for problem in found.problems:
        err(f"memtray: note: {problem}")
    if not found.servers:
        where = ", ".join(f"{p.label} ({p.host}:{p.port})" for p in servers.places())
        _out(f"no model server found on this computer (looked for {where})")
        return 0
    for s in found.servers:
        _out(f"{s.place.label} at {s.place.api_base}: {len(s.models)} model(s)")
        for m in s.models:
            verdict = capability.judge(m.model)
            held = "" if verdict.unattended else "  (memory held for review: too small)"
            _out(f"  memtray model use {m.model} --api-base {s.place.api_base}{held}")
    return 0


def cmd_remove(args: argparse.Namespace, home: Home) -> int:
    m = catalogue.find(args.id)
    directory = catalogue.models_dir(home.root)
    removed = []
    for path in (directory / m.file, part_path(directory / m.file)):
        with contextlib.suppress(FileNotFoundError):
            size = path.stat().st_size
            path.unlink()
            removed.append(size)
    if not removed:
        _out(f"{m.id} is not downloaded")
        return 0
    _out(f"removed {m.id} ({human_size(sum(removed))} freed)")
    if cfgmod.load(home).model == m.runs_as:
        err(f"memtray: note: {m.runs_as} is still the configured model; `memtray model use` another one")
    return 0
