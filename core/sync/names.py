"""Device names: what the user calls a device ("Laptop"), shown wherever a device is.

A device is known by its id (``d`` + 12 hex digits, core/base/home.py), which says
nothing to a person. :func:`name_device` records a ``device.named`` event; it travels
with sync (core/log/origin.py ``EXPORTED``), so every device shows the same names.
Front ends show :func:`label` (the name, else the id) and keep the id as detail (a
tooltip, a ``--json`` member); :func:`named` puts the names into a text that spells
ids (a merge conflict's reason was written with them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from memtray.core.base.errors import MemtrayError
from memtray.core.log.events import DeviceNamed
from memtray.core.log.payloads_sync import DEVICE_ID, DEVICE_NAME_MAX
from memtray.core.log.store import Store
from memtray.core.memory.wording import clean_controls

MAX_NAME = DEVICE_NAME_MAX
_IN_TEXT = re.compile(rf"\b{DEVICE_ID.pattern}\b")


class DeviceNameError(MemtrayError):
    """A name or device the user gave cannot be used."""


def known_devices(store: Store, here: str) -> list[str]:
    """This device first, then every other device this home has heard of (sync cursors,
    names, the devices memory revisions name), sorted."""
    state = store.state
    others = set(state.sync) | set(state.device_names)
    for item in state.review.values():
        others |= set(item.get("words") or ())
    others.discard(here)
    return [here, *sorted(d for d in others if DEVICE_ID.fullmatch(d))]


def resolve(store: Store, here: str, device: str | None) -> str:
    """The device id ``device`` names: an id, a unique prefix of one, or a name; None: this one."""
    if device is None:
        return here
    devices = known_devices(store, here)
    names = store.state.device_names
    hits = [d for d in devices if d == device] or [d for d in devices if names.get(d, "").casefold() == device.casefold()] \
        or [d for d in devices if d.startswith(device)]
    if len(hits) == 1:
        return hits[0]
    if DEVICE_ID.fullmatch(device):
        return device  # a device this home has not heard from yet: it may be named ahead
    raise DeviceNameError(f"no device {device!r}" if not hits else f"{device!r} names {len(hits)} devices",
                          hint="`memtray device` lists the devices this home knows.")


def name_device(store: Store, device: str, name: str) -> None:
    """Record that ``device`` is called ``name`` (an empty name removes it). Call on the writer."""
    if not DEVICE_ID.fullmatch(device):
        raise DeviceNameError(f"{device!r} is not a device id", hint="A device id is d and 12 hex digits.")
    name = " ".join(clean_controls(name).split())
    if len(name) > MAX_NAME:
        raise DeviceNameError(f"the name is {len(name)} characters; at most {MAX_NAME}")
    if DEVICE_ID.fullmatch(name):
        raise DeviceNameError("a device's name cannot look like a device id")
    if store.state.device_names.get(device, "") == name:
        return
    store.append(DeviceNamed(device=device, name=name))


def label(names: Mapping[str, str], device: str | None) -> str:
    """The name of ``device`` if it has one, else its id ("" for none)."""
    if not device:
        return ""
    return names.get(device) or device


def named(text: str, names: Mapping[str, str]) -> str:
    """``text`` with every device id it spells replaced by that device's name (if it has one)."""
    return _IN_TEXT.sub(lambda m: names.get(m.group(0)) or m.group(0), text)


def listing(store: Store, here: str) -> list[dict[str, Any]]:
    """``memtray device --json``: each device this home knows, its name, and whether it is this one."""
    names = store.state.device_names
    return [{"device": d, "name": names.get(d), "this": d == here} for d in known_devices(store, here)]


def names_of(store: Store, devices: Iterable[str | None]) -> dict[str, str]:
    """``{id: name}`` for those of ``devices`` that have a name (a ``--json`` member beside ids)."""
    names = store.state.device_names
    return {d: names[d] for d in devices if d and d in names}


__all__ = ["MAX_NAME", "DeviceNameError", "known_devices", "label", "listing", "name_device", "named", "names_of",
           "resolve"]
