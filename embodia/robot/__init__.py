"""ROS 2 deployment: a policy node, a simulator bridge node, a launch supervisor, topic recording.

The logic lives in modules that do not need ROS (tested without a ROS graph):
``converters`` (the registry of message converters: ``convert``, ``convert_sensors``, and the generic
``flatten``), ``safety`` (watchdog, command filter), ``rate`` (control timing), ``config`` (node configs),
``controller`` (what the policy node computes per tick), ``launch/`` (ROS 2 YAML and XML launch files:
reading, planning, supervising), ``bag_reader`` / ``bag_import`` / ``mcap`` (ROS 2 bags <-> trajectory
stores), ``netns`` (isolated network namespaces). The rclpy nodes are thin shells around it:
``policy_node``, ``sim_bridge``, ``record``. Command line: ``embodia robot ...`` (``embodia/cli/robot.py``).
"""

from __future__ import annotations
