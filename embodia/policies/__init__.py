"""Policies: the :class:`Policy` protocol, simple policies, and loading trained ones from a folder."""

from __future__ import annotations

from embodia.policies.base import Policy, RandomPolicy, load_policy, make_policy, register_policy_type

__all__ = ["Policy", "RandomPolicy", "load_policy", "make_policy", "register_policy_type"]
