"""SRL: synergistic representation learning for video object-centric learning.

Paper: "From Vicious to Virtuous Cycles: Synergistic Representation Learning for Unsupervised Video
Object-Centric Learning" (ICLR 2026), arXiv:2602.03390; code github.com/hynnsk/SRL. Built on Slot
Attention (Locatello et al., arXiv:2006.15055) and SlotContrast's slot-slot contrast across time.

Slot Attention over frozen encoder features (any :class:`~embodia.perception.encoders.ImageEncoder`: a
backbone trained here on the rendered videos, :mod:`.backbones`, or a user's DINOv2 through
``HuggingFaceEncoder``), a transformer predictor carrying slots across frames, and a spatial-broadcast MLP
decoder that reconstructs the features with per-slot alpha masks. Losses, after the authors' code
(``srl/losses.py``, ``configs/srl/movi_c.yaml``): feature reconstruction, slot-slot contrast across time, a
slot regulariser over the first 10 % of training, then from 20 % deblurring (decoder outputs contrasted
against encoder features, positives share an encoder-side slot) and denoising (encoder-side features
contrasted among themselves, positives share a decoder mask), both over groups of 4 frames, through one
bias-free linear projector each, scaled by SupCon's tau / tau_base. Equations: :mod:`.model` and
:mod:`.losses`.

    from embodia.perception.srl import SRLConfig, train_srl, evaluate, variant_config
    model, encoder, log = train_srl(batch.rgb, variant_config(SRLConfig(), "srl"))
    evaluate(model, encoder, test.rgb, test.masks)   # fg_ari, mbo, fg_ari_attn, slot_similarity, mask_confidence
"""

from embodia.perception.srl.model import SlotAttention, SRLModel, SRLOutput
from embodia.perception.srl.train import (
    VARIANTS,
    SRLConfig,
    SRLConfigError,
    evaluate,
    predict_masks,
    pretrain_encoder,
    train_srl,
    variant_config,
)

__all__ = [
    "VARIANTS",
    "SRLConfig",
    "SRLConfigError",
    "SRLModel",
    "SRLOutput",
    "SlotAttention",
    "evaluate",
    "predict_masks",
    "pretrain_encoder",
    "train_srl",
    "variant_config",
]
