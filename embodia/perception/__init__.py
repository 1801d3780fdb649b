"""Perception models: image and video encoders that policies and agents use, trained on what embodia's
simulators render.

A layer between :mod:`embodia.runner` and :mod:`embodia.policies` (ARCHITECTURE.md): it may render data
through the environments and the runner; policies may use its encoders.

- :mod:`.encoders`: the image-encoder protocol (images in, patch tokens and a pooled vector out);
  :mod:`.encoder_io`: encoders as folders (``config.json`` + ``model.safetensors``), by kind.
- :mod:`.pixel_observations`: the pixel-observation path of policies (images and states to one vector).
- :mod:`.datasets`: labelled frames (depth, segmentation, object poses, task phase) from the pixel tasks;
  :mod:`.teachers`: three small encoders trained on them with different objectives (VER's teachers).
- :mod:`.ver`: VER, the mixture-of-experts expert library distilled from the teachers, routed per patch.
- :mod:`.iqa`: Embodied-IQA, image quality scored by what a distortion does to a policy.
- :mod:`.video`: multi-object videos rendered in MuJoCo, with depth and instance masks, stored as zarr.
- :mod:`.srl`: SRL, object-centric video learning (slot attention with synergistic contrastive losses).
- :mod:`.vff`: the Video Fourier Field, continuous space-time video super-resolution.
"""
