"""The bottom layer: contracts and helpers every other part of embodia builds on; imports nothing else of embodia."""
