"""PyInstaller hook for memtray: every module (feature modules are imported by name) and the resources."""

from PyInstaller.utils.hooks import collect_data_files, collect_submodules, copy_metadata

hiddenimports = collect_submodules("memtray")
# icons, prompts, skills, the .desktop file: read through importlib.resources at run time
datas = collect_data_files("memtray.resources", include_py_files=False)
datas += copy_metadata("memtray")
