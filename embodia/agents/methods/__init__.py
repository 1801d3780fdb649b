"""The methods behind the agent tools, one module (or small package) each.

- :mod:`~embodia.agents.methods.gateskip` — GateSkip residual gates and token-wise layer skipping;
- :mod:`~embodia.agents.methods.cold_steer` — COLD-Steer activation steering from in-context examples;
- :mod:`~embodia.agents.methods.hybrid_zo` — zeroth-order base + first-order LoRA fine-tuning;
  :mod:`~embodia.agents.methods.hybrid_zo_facts` — its new-facts task on a tiny pretrained transformer;
- :mod:`~embodia.agents.methods.emotion_hallucer` — paired yes/no hallucination metric and PEP-MEK;
- :mod:`~embodia.agents.methods.grounding` — token-level grounding reliability;
  :mod:`~embodia.agents.methods.grounding_task` — its experiment (hallucinations induced, two labellings);
- :mod:`~embodia.agents.methods.spatial_dise` — Spatial-DISE spatial-reasoning questions and their evaluator;
- :mod:`~embodia.agents.methods.egonet_gnn` — EgoNetGNN: peer effects with a learned exposure mapping;
- :mod:`~embodia.agents.methods.amortized_explainer` — a faithfulness-trained amortised feature explainer;
- :mod:`~embodia.agents.methods.data` — the offline corpora and task sets they run on.
"""

from __future__ import annotations
