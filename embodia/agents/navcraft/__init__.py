"""NavCraft: collaborative multi-robot navigation missions — generation, schedules, validation, repair,
a hierarchical agent and CoNavBench-style evaluation.

Modules: :mod:`.mission` (data model), :mod:`.travel` (geodesic costs), :mod:`.timing` (when steps
happen), :mod:`.generate` (stage 1 missions, stage 2 collaboration, by rules), :mod:`.agent_tools` and
:mod:`.agentic` (the same two stages proposed by a language model through tool calls, rules as the
fallback), :mod:`.benchmark` (many episodes, single-robot and collaborative), :mod:`.validate` and
:mod:`.repair` (schedule checks and fixes), :mod:`.episode_io` (JSON files), :mod:`.executor`,
:mod:`.planner` and :mod:`.metrics` (running missions in the multi-robot environment and scoring them),
:mod:`.navigator_data` and :mod:`.learned_navigator` (a behaviour-cloned navigator from expert rollouts).
"""
