"""What a provider call cost: litellm's price list applied to the call's token counts.

litellm keeps a price per input and output token for the models it knows
(``litellm.cost_per_token``, read from its bundled cost map: memtray forces
``LITELLM_LOCAL_MODEL_COST_MAP``, so no price is fetched from the network). A model it does
not know (a local server's own name, a new model) has no price: the usage then holds the
tokens only and the ledger says the cost is unknown rather than guess. The in-process
offline model (``local/...``) costs nothing.
"""

from __future__ import annotations

import logging
import math
from types import ModuleType
from typing import Any

from memtray.core.llm import localmodel

log = logging.getLogger(__name__)


def priced(litellm: ModuleType | None, model: str, usage: dict[str, Any] | None, *,
           embedding: bool = False) -> dict[str, Any] | None:
    """``usage`` with ``cost`` (US dollars) added where the price of ``model`` is known
    (``litellm``: the loaded module; None for the in-process model, which needs none).

    Never raises: a price litellm cannot give leaves the usage as it was."""
    if not usage:
        return usage
    if localmodel.is_local(model):
        return {**usage, "cost": 0.0}
    prompt = usage.get("prompt_tokens")
    completion = usage.get("completion_tokens", 0)
    if litellm is None or not isinstance(prompt, int) or not isinstance(completion, int):
        return usage
    try:
        cost_in, cost_out = litellm.cost_per_token(
            model=model, prompt_tokens=prompt, completion_tokens=completion,
            call_type="aembedding" if embedding else "acompletion")
    except Exception as exc:  # litellm raises for a model it has no price for (ModelNotMappedError, ...)
        log.debug("no price for %s: %s", model, exc)
        return usage
    cost = float(cost_in) + float(cost_out)
    if not math.isfinite(cost) or cost < 0:
        return usage
    return {**usage, "cost": cost}
