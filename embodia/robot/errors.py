"""Errors the ROS 2 part of embodia raises for bad input, one type per kind (all are ``EmbodiaError``)."""

from __future__ import annotations

from embodia.core.errors import EmbodiaError


class RobotConfigError(EmbodiaError, ValueError):
    """A node configuration (YAML file or ROS parameters) that is missing a field or has a wrong value."""


class MessageError(EmbodiaError, ValueError):
    """A ROS message that cannot become the expected array (wrong joint names, encoding, size, NaN ...).

    The nodes catch it per message, log it on one line and keep running.
    """


class LaunchFileError(EmbodiaError, ValueError):
    """A launch file that is not valid ROS 2 YAML launch, or names an executable that cannot be found."""


class IsolationError(EmbodiaError, RuntimeError):
    """An isolated network namespace could not be created (not root, or ``unshare`` / ``ip`` missing)."""


class BagError(EmbodiaError, ValueError):
    """An MCAP / rosbag2 file that is missing, unreadable, or holds nothing that can become a trajectory."""
