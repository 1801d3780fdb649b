"""The ALOHA simulation tasks of ACT through the real ``gym-aloha`` package, registered as ``embodia/Aloha*-v0``.

Registering costs nothing: the entry points are strings, so neither gym-aloha nor dm_control is imported
until an environment is made (``pip install embodia[aloha]`` installs gym-aloha).

- :mod:`.env`: :class:`~embodia.envs.aloha.env.AlohaEnv`, gym-aloha's joint-space tasks behind embodia's
  contract (14-D joint-position actions, ``state`` observations, optional ``top_rgb``, exact state);
- :mod:`.experts`: ACT's scripted experts (end-effector waypoints, replayed as joint targets).
"""

from __future__ import annotations

from embodia.envs.registration import register_env

#: steps per episode: ACT's ``episode_len`` for both simulated tasks (50 Hz, 8 s); gym-aloha registers 300
EPISODE_STEPS = 400

register_env(
    "embodia/AlohaTransferCube-v0",
    "embodia.envs.aloha.env:AlohaEnv",
    kwargs={"task": "transfer_cube"},
    max_episode_steps=EPISODE_STEPS,
    description="gym-aloha bimanual ViperX: the right arm picks the cube and hands it to the left (ACT's "
    "sim transfer cube); joint-position actions",
)
register_env(
    "embodia/AlohaInsertion-v0",
    "embodia.envs.aloha.env:AlohaEnv",
    kwargs={"task": "insertion"},
    max_episode_steps=EPISODE_STEPS,
    description="gym-aloha bimanual ViperX: each arm picks one object and the peg is inserted into the "
    "socket in mid-air (ACT's sim insertion); joint-position actions",
)
