"""Perception models: image and video encoders that policies and agents use, trained on what embodia's
simulators render.

A layer between :mod:`embodia.runner` and :mod:`embodia.policies` (ARCHITECTURE.md): it may render data
through the environments and the runner; policies may use its encoders.

- :mod:`.encoders`: the image-encoder protocol (images in, patch tokens and a pooled vector out).
- :mod:`.video`: multi-object videos rendered in MuJoCo, with depth and instance masks, stored as zarr.
- :mod:`.srl`: SRL, object-centric video learning (slot attention with synergistic contrastive losses).
- :mod:`.vff`: the Video Fourier Field, continuous space-time video super-resolution.
"""
