"""NavCraft: collaborative multi-robot navigation missions — generation, schedules, validation, repair,
a hierarchical agent and CoNavBench-style evaluation.

Modules: :mod:`.mission` (data model), :mod:`.travel` (geodesic costs), :mod:`.timing` (when steps
happen), :mod:`.generate` (stage 1 missions, stage 2 collaboration), :mod:`.benchmark` (many episodes), :mod:`.validate` and :mod:`.repair`
(schedule checks and fixes), :mod:`.episode_io` (JSON files), :mod:`.executor`, :mod:`.planner` and
:mod:`.metrics` (running missions in the multi-robot environment and scoring them).
"""
