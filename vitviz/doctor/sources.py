"""Expected figures the doctor quotes, each with where it comes from, and the doctor's thresholds.

Published facts name their paper and table or the upstream file; everything else the doctor
compares against is measured at run time on ``mae-tiny`` (the report says "measured on
mae-tiny") or on the checkpoint's own random-weight twin.
"""

from __future__ import annotations

#: The MAE paper.
MAE_PAPER = "He et al., Masked Autoencoders Are Scalable Vision Learners, CVPR 2022"

#: Masking ratio of the reference recipe.
MASK_RATIO = 0.75
MASK_RATIO_SOURCE = f"{MAE_PAPER}, §4 and Fig. 5 (75% works well for fine-tuning and linear probing)"

#: Per-patch normalised targets against plain pixels, ViT-L fine-tuning top-1 (%).
NORM_PIX_FT = (84.9, 85.4)
NORM_PIX_SOURCE = (f"{MAE_PAPER}, Table 1c: pixels without norm {NORM_PIX_FT[0]}% vs with per-patch norm "
                   f"{NORM_PIX_FT[1]}% fine-tuned top-1 (ViT-L)")

#: The reference decoder.
DECODER = (512, 8, 16)
DECODER_SOURCE = f"{MAE_PAPER}, Table 1a-b (decoder 8 blocks, 512 wide); facebookresearch/mae models_mae.py (16 heads)"

#: Preprocessing of the reference pretraining.
PRETRAIN_SIZE = 224
PREPROCESS_SOURCE = ("facebookresearch/mae main_pretrain.py: RandomResizedCrop(args.input_size=224), "
                     "Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])")
SINCOS_SOURCE = ("facebookresearch/mae models_mae.py: pos_embed and decoder_pos_embed are fixed 2-D sin-cos tables "
                 "(requires_grad=False), so a file's table equals the one computed for its grid")
INTERPOLATE_SOURCE = ("facebookresearch/mae util/pos_embed.py interpolate_pos_embed: bicubic resampling of "
                      "pos_embed only (decoder_pos_embed is left as it was)")
LEAK_SOURCE = ("pengzhiliang/MAE-pytorch#40: de-normalising a norm-pix prediction with the "
               "hidden patch's true mean and variance puts the answer's colour and contrast into the picture")
OFFICIAL_FILES = ("facebookresearch/mae README: mae_visualize_vit_*.pth (encoder + decoder, pixel targets) for "
                  "pictures, mae_pretrain_vit_*.pth (encoder only) for fine-tuning, *_full.pth (norm-pix decoder)")
REGISTERS_SOURCE = ("Darcet et al., Vision Transformers Need Registers, ICLR 2024, §2 (high-norm tokens in large "
                    "ViTs trained long; often none in small ones)")

MEASURED = "measured on mae-tiny (same photos and masks)"
TWIN = "measured on the checkpoint's own random-weight twin (same architecture, seeded random weights)"

#: Hidden-patch error at or above this share of the ring-mean baseline's is "no better than the baseline".
BASELINE_SHARE = 0.95
#: ... at or above this share of the random twin's is "no better than random weights".
TWIN_SHARE = 0.9
#: A head whose mean normalised attention entropy is at least this is near-uniform ("dead": it averages all).
DEAD_ENTROPY = 0.98
#: Share of near-uniform heads above which the attention looks untrained.
DEAD_HEADS_SHARE = 0.5
#: Loss ratio under which one target space explains the decoder's output clearly better than the other.
TARGET_MARGIN = 0.8
#: Hidden-patch error rises this much over its value at the lowest ratio measured: "the error turns up".
KNEE_RISE = 1.25
#: Ratios of the error curve.
CURVE_RATIOS: tuple[float, ...] = (0.25, 0.5, 0.65, 0.75, 0.85, 0.95)
