"""Hotkey strings ("Ctrl+Alt+Space") parsed once and mapped to each platform's codes.

Pure functions, no Qt: the string is what ``QKeySequence.toString(PortableText)``
writes and what ``config.hotkey`` stores.
"""

from __future__ import annotations

from dataclasses import dataclass

from memtray.core.base.errors import ConfigError

MODIFIERS = {
    "ctrl": "ctrl", "control": "ctrl",
    "alt": "alt", "option": "alt",
    "shift": "shift",
    "meta": "meta", "super": "meta", "win": "meta", "cmd": "meta", "logo": "meta",
}
_NAMED = {
    "space": "Space", "return": "Return", "enter": "Return", "tab": "Tab", "esc": "Escape",
    "escape": "Escape", "backspace": "Backspace", "insert": "Insert", "ins": "Insert", "delete": "Delete",
    "del": "Delete", "home": "Home", "end": "End", "pgup": "PgUp", "pageup": "PgUp", "pgdown": "PgDown",
    "pagedown": "PgDown", "left": "Left", "right": "Right", "up": "Up", "down": "Down",
    "print": "Print", "pause": "Pause",
}


@dataclass(frozen=True)
class HotkeySpec:
    mods: frozenset[str]
    key: str  # "Space", "A", "5", "F1", "Return", ...

    def __str__(self) -> str:
        order = ["ctrl", "alt", "shift", "meta"]
        names = {"ctrl": "Ctrl", "alt": "Alt", "shift": "Shift", "meta": "Meta"}
        return "+".join([names[m] for m in order if m in self.mods] + [self.key])


def parse(text: str) -> HotkeySpec:
    """``"Ctrl+Alt+Space"`` -> HotkeySpec. Raises ConfigError on nonsense."""
    parts = [p.strip() for p in text.replace(" ", "").split("+")]
    if text.strip().endswith("++"):  # "Ctrl++" means Ctrl and the plus key
        parts = [*parts[:-2], "+"]
    if not parts or not parts[-1]:
        raise ConfigError(f"{text!r} is not a hotkey", hint="Write it like Ctrl+Alt+Space.")
    *mods, key = parts
    mod_set: set[str] = set()
    for m in mods:
        canon = MODIFIERS.get(m.lower())
        if canon is None:
            raise ConfigError(f"{m!r} in {text!r} is not a modifier", hint="Use Ctrl, Alt, Shift or Meta.")
        mod_set.add(canon)
    low = key.lower()
    if low in _NAMED:
        key = _NAMED[low]
    elif len(key) == 1:
        key = key.upper()
    elif low.startswith("f") and low[1:].isdigit() and 1 <= int(low[1:]) <= 24:
        key = f"F{int(low[1:])}"
    else:
        raise ConfigError(f"unknown key {key!r} in {text!r}")
    if not mod_set and not key.startswith("F"):
        raise ConfigError(
            f"{text!r} has no modifier; it would swallow that key everywhere",
            hint="Add Ctrl, Alt or Meta (e.g. Ctrl+Alt+Space).",
        )
    return HotkeySpec(frozenset(mod_set), key)


# --- X11 ------------------------------------------------------------------------------

X11_MASKS = {"shift": 1 << 0, "ctrl": 1 << 2, "alt": 1 << 3, "meta": 1 << 6}
#: CapsLock and NumLock: grab with every combination so the hotkey works with them on
X11_IGNORED = (0, 1 << 1, 1 << 4, (1 << 1) | (1 << 4))
_X11_KEYSYMS = {
    "Space": "space", "Return": "Return", "Tab": "Tab", "Escape": "Escape", "Backspace": "BackSpace",
    "Insert": "Insert", "Delete": "Delete", "Home": "Home", "End": "End", "PgUp": "Prior",
    "PgDown": "Next", "Left": "Left", "Right": "Right", "Up": "Up", "Down": "Down",
    "Print": "Print", "Pause": "Pause", "`": "grave", "-": "minus", "=": "equal", "[": "bracketleft",
    "]": "bracketright", "\\": "backslash", ";": "semicolon", "'": "apostrophe", ",": "comma",
    ".": "period", "/": "slash", "+": "plus",
}


def x11(spec: HotkeySpec) -> tuple[int, str]:
    """(modifier mask, keysym name) for XGrabKey."""
    mask = 0
    for m in spec.mods:
        mask |= X11_MASKS[m]
    sym = _X11_KEYSYMS.get(spec.key)
    if sym is None:
        sym = spec.key.lower() if len(spec.key) == 1 and spec.key.isalpha() else spec.key
    return mask, sym


# --- Wayland (XDG shortcuts spec, used by the GlobalShortcuts portal) ---------------

def xdg_trigger(spec: HotkeySpec) -> str:
    names = {"ctrl": "CTRL", "alt": "ALT", "shift": "SHIFT", "meta": "LOGO"}
    order = ["ctrl", "alt", "shift", "meta"]
    return "+".join([names[m] for m in order if m in spec.mods] + [x11(spec)[1]])


# --- Windows --------------------------------------------------------------------------

WIN_MODS = {"alt": 0x0001, "ctrl": 0x0002, "shift": 0x0004, "meta": 0x0008}
WIN_NOREPEAT = 0x4000
_WIN_VK = {
    "Space": 0x20, "Return": 0x0D, "Tab": 0x09, "Escape": 0x1B, "Backspace": 0x08, "Insert": 0x2D,
    "Delete": 0x2E, "Home": 0x24, "End": 0x23, "PgUp": 0x21, "PgDown": 0x22, "Left": 0x25,
    "Up": 0x26, "Right": 0x27, "Down": 0x28, "Print": 0x2C, "Pause": 0x13,
}


def windows(spec: HotkeySpec) -> tuple[int, int]:
    """(fsModifiers, virtual-key code) for RegisterHotKey."""
    mods = WIN_NOREPEAT
    for m in spec.mods:
        mods |= WIN_MODS[m]
    k = spec.key
    if k in _WIN_VK:
        return mods, _WIN_VK[k]
    if len(k) == 1 and (k.isdigit() or "A" <= k <= "Z"):
        return mods, ord(k)
    if k.startswith("F") and k[1:].isdigit():
        return mods, 0x70 + int(k[1:]) - 1
    raise ConfigError(f"the key {k!r} cannot be a global hotkey on Windows")


# --- macOS (Carbon) --------------------------------------------------------------------

# Qt on macOS calls the Command key "Ctrl" and the Control key "Meta".
MAC_MODS = {"ctrl": 0x0100, "shift": 0x0200, "alt": 0x0800, "meta": 0x1000}
_MAC_VK = {
    "A": 0x00, "S": 0x01, "D": 0x02, "F": 0x03, "H": 0x04, "G": 0x05, "Z": 0x06, "X": 0x07,
    "C": 0x08, "V": 0x09, "B": 0x0B, "Q": 0x0C, "W": 0x0D, "E": 0x0E, "R": 0x0F, "Y": 0x10,
    "T": 0x11, "1": 0x12, "2": 0x13, "3": 0x14, "4": 0x15, "6": 0x16, "5": 0x17, "9": 0x19,
    "7": 0x1A, "8": 0x1C, "0": 0x1D, "O": 0x1F, "U": 0x20, "I": 0x22, "P": 0x23, "L": 0x25,
    "J": 0x26, "K": 0x28, "N": 0x2D, "M": 0x2E, "Space": 0x31, "Return": 0x24, "Tab": 0x30,
    "Escape": 0x35, "Backspace": 0x33, "Delete": 0x75, "Home": 0x73, "End": 0x77, "PgUp": 0x74,
    "PgDown": 0x79, "Left": 0x7B, "Right": 0x7C, "Down": 0x7D, "Up": 0x7E,
    "F1": 0x7A, "F2": 0x78, "F3": 0x63, "F4": 0x76, "F5": 0x60, "F6": 0x61, "F7": 0x62,
    "F8": 0x64, "F9": 0x65, "F10": 0x6D, "F11": 0x67, "F12": 0x6F,
}


def macos(spec: HotkeySpec) -> tuple[int, int]:
    """(Carbon modifiers, virtual key code) for RegisterEventHotKey."""
    mods = 0
    for m in spec.mods:
        mods |= MAC_MODS[m]
    if spec.key not in _MAC_VK:
        raise ConfigError(f"the key {spec.key!r} cannot be a global hotkey on macOS")
    return mods, _MAC_VK[spec.key]
