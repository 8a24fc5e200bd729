"""A small, fast code highlighter: keywords, strings, comments, numbers, calls.

Not a parser: a handful of regexes that suit the languages a chat answer
usually shows (Python, shell, JS/TS, Rust, Go, C-likes, SQL, JSON, YAML).
Pure functions; the chat view turns the tokens into character formats.
"""

from __future__ import annotations

import re

KEYWORDS = {
    "python": "and as assert async await break class continue def del elif else except False finally for from "
    "global if import in is lambda None nonlocal not or pass raise return True try while with yield match case self",
    "js": "async await break case catch class const continue debugger default delete do else export extends false "
    "finally for function if import in instanceof let new null return super switch this throw true try typeof "
    "undefined var void while with yield interface type enum implements readonly",
    "rust": "as async await break const continue crate dyn else enum extern false fn for if impl in let loop match mod "
    "move mut pub ref return self Self static struct super trait true type unsafe use where while Some None Ok Err",
    "go": "break case chan const continue default defer else fallthrough for func go goto if import interface map "
    "package range return select struct switch type var nil true false",
    "c": "auto break case char const continue default do double else enum extern float for goto if inline int long "
    "register return short signed sizeof static struct switch typedef union unsigned void volatile while class "
    "namespace public private protected template typename virtual override new delete nullptr true false bool",
    "shell": "if then else elif fi for while until do done case esac in function return export local echo set unset "
    "cd exit source sudo",
    "sql": "select from where and or not insert into values update set delete create table drop alter index join "
    "left right inner outer on group by order having limit as null is distinct union primary key",
}
ALIASES = {
    "py": "python", "python3": "python", "javascript": "js", "typescript": "js", "ts": "js", "tsx": "js",
    "jsx": "js", "node": "js", "rs": "rust", "golang": "go", "cpp": "c", "c++": "c", "h": "c", "java": "c",
    "cs": "c", "csharp": "c", "kotlin": "c", "swift": "c", "sh": "shell", "bash": "shell", "zsh": "shell",
    "console": "shell", "fish": "shell", "ps1": "shell", "powershell": "shell", "postgres": "sql", "sqlite": "sql",
    "mysql": "sql", "json": "json", "yaml": "yaml", "yml": "yaml", "toml": "yaml", "ini": "yaml",
}
HASH_COMMENT = {"python", "shell", "yaml"}

_TOKEN = re.compile(
    r"""(?P<comment>//[^\n]*|/\*.*?\*/|--[^\n]*|\#[^\n]*)
      |(?P<string>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`[^`]*`)
      |(?P<number>\b0[xX][0-9a-fA-F_]+\b|\b\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?\b)
      |(?P<word>[A-Za-z_][A-Za-z0-9_]*)(?P<call>\s*\()?
    """,
    re.VERBOSE | re.DOTALL,
)

Token = tuple[str, str]  # (text, kind) kind in: plain keyword string comment number func


def language(name: str) -> str:
    low = name.strip().lower()
    return ALIASES.get(low, low)


def tokens(code: str, lang: str) -> list[Token]:
    """Split ``code`` into (text, kind) tokens; the texts concatenate back to ``code``."""
    lang = language(lang)
    words = set(KEYWORDS.get(lang, "").split())
    if lang == "sql":
        words |= {w.upper() for w in words}
    if not lang:
        words = set(KEYWORDS["python"].split()) | set(KEYWORDS["js"].split())
    out: list[Token] = []
    pos = 0
    for m in _TOKEN.finditer(code):
        kind = m.lastgroup or ""
        text = m.group(0)
        if kind == "comment":
            if text.startswith("#") and lang and lang not in HASH_COMMENT:
                continue  # '#include', '#[derive]': not a comment there
            if text.startswith("--") and lang not in ("sql", ""):
                continue
            if text.startswith(("//", "/*")) and lang in HASH_COMMENT:
                continue
        if m.start() > pos:
            out.append((code[pos : m.start()], "plain"))
        if kind in ("word", "call"):
            word = m.group("word")
            if word in words:
                out.append((word, "keyword"))
            elif m.group("call"):
                out.append((word, "func"))
            else:
                out.append((word, "plain"))
            rest = text[len(word):]
            if rest:
                out.append((rest, "plain"))
        else:
            out.append((text, kind))
        pos = m.end()
    if pos < len(code):
        out.append((code[pos:], "plain"))
    return out
