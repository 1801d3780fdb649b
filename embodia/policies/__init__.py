"""Learning policies from trajectory stores: the registry of training methods, networks, learners, training.

Every method is registered here, by name, with its learner and config classes as ``"module:Class"``
strings (imported when the method is used): the CLI, training, the comparison and the tests read this one
registry (:func:`~embodia.policies.learner.learner_names`, :func:`~embodia.policies.learner.learner_classes`).
"""

from __future__ import annotations

from embodia.policies.learner import learner_classes, learner_names, register_learner

register_learner(
    "bc",
    "embodia.policies.bc:BC",
    "embodia.policies.bc:BCConfig",
    "behaviour cloning, optionally with action chunks",
)
register_learner(
    "iql",
    "embodia.policies.iql:IQL",
    "embodia.policies.iql:IQLConfig",
    "implicit Q-learning (n-step optional), DDPG+BC or AWR extraction",
)
register_learner(
    "gciql",
    "embodia.policies.gciql:GCIQL",
    "embodia.policies.gciql:GCIQLConfig",
    "goal-conditioned IQL with hindsight goal relabelling",
)
register_learner(
    "deas",
    "embodia.policies.deas:DEAS",
    "embodia.policies.deas:DEASConfig",
    "DEAS: detached value learning over action sequences",
)
register_learner(
    "flow_bc",
    "embodia.policies.flow:FlowBC",
    "embodia.policies.flow:FlowBCConfig",
    "flow-matching behaviour cloning over action sequences",
)
register_learner(
    "fql",
    "embodia.policies.fql:FQL",
    "embodia.policies.fql:FQLConfig",
    "flow Q-learning; with horizon > 1, QC-FQL (action chunks, chunked critic)",
)
register_learner(
    "pixel_bc",
    "embodia.policies.pixel_bc:PixelBC",
    "embodia.policies.pixel_bc:PixelBCConfig",
    "behaviour cloning from camera images (CNN, a saved encoder such as VER, or a local DINOv2/CLIP)",
)
register_learner(
    "pixel_flow_bc",
    "embodia.policies.pixel_flow_bc:PixelFlowBC",
    "embodia.policies.pixel_flow_bc:PixelFlowBCConfig",
    "flow-matching behaviour cloning from camera images (the encoders of pixel_bc)",
)
register_learner(
    "act",
    "embodia.policies.act:ACT",
    "embodia.policies.act:ACTConfig",
    "ACT: action chunking with transformers (CVAE; states and / or cameras; temporal ensembling)",
)
register_learner(
    "diffusion_policy",
    "embodia.policies.diffusion_policy:DiffusionPolicy",
    "embodia.policies.diffusion_policy:DiffusionPolicyConfig",
    "Diffusion Policy (CNN): DDPM-trained 1-D U-Net over action sequences, DDIM sampling; states and / or cameras",
)

__all__ = ["learner_classes", "learner_names", "register_learner"]
