"""ROS 2 deployment: a policy node, a simulator bridge node, a launch supervisor, topic recording.

The logic lives in modules that do not need ROS (tested without a ROS graph):
``convert`` (messages <-> arrays), ``safety`` (watchdog, command filter), ``rate`` (control timing),
``config`` (node configs), ``controller`` (what the policy node computes per tick), ``launch`` (the YAML
launch supervisor), ``netns`` (isolated network namespaces). The rclpy nodes are thin shells around it:
``policy_node``, ``sim_bridge``, ``record``. Command line: ``embodia robot ...`` (see ``cli``).
"""

from __future__ import annotations
