"""ROS 2 package wrapper around embodia's nodes (the logic lives in the embodia Python package)."""
