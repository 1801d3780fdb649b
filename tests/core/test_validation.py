"""Config validation: JSON schemas carry every field's docstring, inherited ones included."""

from __future__ import annotations

from dataclasses import dataclass

from embodia.core.validation import schema


@dataclass
class _Base:
    rate: float = 1.0
    """How often, per second."""
    name: str = "x"
    """What it is called."""


@dataclass
class _Inner:
    depth: int = 2
    """How deep."""


@dataclass
class _Child(_Base):
    name: str = "y"
    """The child's own words win."""
    inner: _Inner | None = None
    """A nested config."""
    plain: int = 0


def test_schema_descriptions_come_from_the_class_and_its_bases():
    properties = schema(_Child)["properties"]
    assert properties["rate"]["description"] == "How often, per second."  # inherited: pydantic alone drops it
    assert properties["name"]["description"] == "The child's own words win."
    assert properties["inner"]["description"] == "A nested config."
    assert "description" not in properties["plain"]  # nothing invented
    assert schema(_Child)["$defs"]["_Inner"]["properties"]["depth"]["description"] == "How deep."


def test_learner_configs_document_their_inherited_network_fields():
    from embodia.policies.bc import BCConfig

    properties = schema(BCConfig)["properties"]
    assert all(properties[name].get("description") for name in ("hidden", "lr", "execute_steps", "chunk"))
