"""PyInstaller hook for litellm (none ships with PyInstaller or its contrib hooks).

litellm imports most providers lazily by name (``importlib.import_module``),
which static analysis cannot see, and reads JSON data at import time (the
offline model cost map ``model_prices_and_context_window_backup.json``,
tokenizers). Collect every submodule except the proxy server and every data
file except the proxy's web UI (~22 MB we never serve).
"""

from PyInstaller.utils.hooks import collect_data_files, collect_submodules, copy_metadata


def _wanted(name: str) -> bool:
    return not name.startswith(("litellm.proxy", "litellm.tests"))


hiddenimports = collect_submodules("litellm", filter=_wanted)
hiddenimports += ["tiktoken_ext", "tiktoken_ext.openai_public"]
datas = collect_data_files(
    "litellm",
    excludes=["proxy/_experimental/**", "proxy/**/*.html", "**/*.md", "**/README*", "**/*.pyi"],
)
datas += copy_metadata("litellm")
