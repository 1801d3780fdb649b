"""ScienceBoard: computer-use agents on real scientific programs, with state-based checkers.

Paper: "ScienceBoard: Evaluating Multimodal Autonomous Agents in Realistic Scientific Workflows"
(ICLR 2026, arXiv 2505.19897). Six domains, each on a real program installed from Debian packages:
KAlgebra (algebra), GRASS GIS (geography), TeXstudio (documents), Stellarium (astronomy), PyMOL
(biochemistry), Coq (theorem proving). Tasks are JSON files (:mod:`.tasks`), episodes run in isolated
sandboxes (:mod:`.sandbox`) through :class:`.env.ScienceBoardEnv`, the checkers read program state
(:mod:`.checkers`), and agents (:mod:`.agents`) act through a programmatic or a GUI interface.
"""
