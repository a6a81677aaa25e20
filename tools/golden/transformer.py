"""Goldens for MultiheadAttention, TransformerEncoderLayer, TransformerEncoder and
scaled_dot_product_attention (float32, small shapes).

Run with Debian's torch: /usr/bin/python3 tools/golden/transformer.py
Writes tests/golden/transformer.json, read by tests/nn/test_transformer.cpp and
tests/ops/test_attention.cpp.

Modules run in train mode with dropout 0: the plain math path (torch 1.13 takes fused "fast
paths" in eval mode without grad). Parameters are re-drawn so that biases and norm weights are
not their trivial defaults. Masks that would need -inf in the JSON are built inside the run
functions from stored bool masks (JSON has no infinities); the C++ side builds them the same way.
torch 1.13 has no is_causal: cases named *causal* use an explicit -inf mask here and athanor's
is_causal flag on the C++ side.
"""
import math

import torch
import torch.nn as nn

import common
from common import save
from module_case import module_case

_tensor_json = common.tensor_json


def short_tensor_json(t):
    """7 significant digits (float32 carries ~7.2): about half the file size; the rounding
    (<= 5e-8 relative) is far below the tests' tolerances."""
    d = _tensor_json(t)
    d["data"] = [float("%.7g" % v) for v in d["data"]]
    return d


common.tensor_json = short_tensor_json

torch.manual_seed(0)
cases = []


def randomize(module, scale=0.3):
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith("norm1.weight") or name.endswith("norm2.weight") or name == "weight":
                p.copy_(1 + scale * torch.randn_like(p))
            else:
                p.copy_(scale * torch.randn_like(p))
    return module


def causal_float(l, s):
    return torch.triu(torch.full((l, s), float("-inf")), diagonal=1)


def to_float_mask(bool_mask):
    return torch.zeros(bool_mask.shape).masked_fill(bool_mask, float("-inf"))


# ---- MultiheadAttention ---------------------------------------------------------------------
E, H, B, L, S = 8, 2, 2, 4, 5


def mha(**kw):
    m = nn.MultiheadAttention(E, H, **kw)
    with torch.no_grad():
        if m.in_proj_bias is not None:
            m.in_proj_bias.normal_(0, 0.3)
            m.out_proj.bias.normal_(0, 0.3)
    return m


# Self-attention, sequence-first, 2-D bool attn_mask, weights averaged over heads.
bool_ls = torch.rand(L, L) < 0.3
bool_ls[:, 0] = False  # every query keeps at least one key
cases.append(module_case(
    "mha_self_bool_mask", mha(), [torch.randn(L, B, E), bool_ls],
    {"batch_first": False},
    run=lambda m, x, am: m(x, x, x, attn_mask=am)))

# Self-attention, batch_first, additive float attn_mask (its gradient is checked too), weights
# per head.
cases.append(module_case(
    "mha_self_float_mask_per_head", mha(batch_first=True),
    [torch.randn(B, L, E), 0.5 * torch.randn(L, L)], {"batch_first": True},
    run=lambda m, x, am: m(x, x, x, attn_mask=am, average_attn_weights=False)))

# Bool key_padding_mask [B, S] with a 3-D bool attn_mask [B * H, L, S]; key/value differ from
# query (separate projections of the packed weight).
kpm = torch.zeros(B, S, dtype=torch.bool)
kpm[0, 1] = True
kpm[1, 3:] = True
am3 = torch.rand(B * H, L, S) < 0.2
am3[..., 0] = False
cases.append(module_case(
    "mha_kpm_bool_attn3d", mha(),
    [torch.randn(L, B, E), torch.randn(S, B, E), torch.randn(S, B, E), kpm, am3],
    {"batch_first": False},
    run=lambda m, q, k, v, p, a: m(q, k, v, key_padding_mask=p, attn_mask=a)))

# Float key_padding_mask (-inf built from the bool one); batch_first. (torch 1.13 silently
# drops a float key_padding_mask combined with a float attn_mask: masked_fill with a float mask.
# A float attn_mask with a bool padding mask is covered by layer_post_relu_float_mask_padding.)
cases.append(module_case(
    "mha_kpm_float", mha(batch_first=True),
    [torch.randn(B, L, E), torch.randn(B, S, E), torch.randn(B, S, E), kpm],
    {"batch_first": True},
    run=lambda m, q, k, v, p: m(q, k, v, key_padding_mask=to_float_mask(p),
                                average_attn_weights=False)))

# Encoder-decoder attention: key is value (the packed q / kv split).
cases.append(module_case(
    "mha_cross_kv", mha(batch_first=True), [torch.randn(B, L, E), torch.randn(B, S, E)],
    {"batch_first": True}, run=lambda m, q, kv: m(q, kv, kv)))

# kdim / vdim: separate q/k/v projection weights; need_weights=False.
cases.append(module_case(
    "mha_kdim_vdim", mha(kdim=5, vdim=7, batch_first=True),
    [torch.randn(B, L, E), torch.randn(B, S, 5), torch.randn(B, S, 7)],
    {"batch_first": True, "kdim": 5, "vdim": 7},
    run=lambda m, q, k, v: m(q, k, v, need_weights=False)[0]))

# No biases; unbatched [L, E] input with a bool key_padding_mask [S].
kpm1 = torch.tensor([False, False, True, False, True])
cases.append(module_case(
    "mha_nobias_unbatched", mha(bias=False),
    [torch.randn(L, E), torch.randn(S, E), torch.randn(S, E), kpm1],
    {"batch_first": False, "bias": False},
    run=lambda m, q, k, v, p: m(q, k, v, key_padding_mask=p)))

# Causal self-attention (athanor: is_causal), batch_first.
cases.append(module_case(
    "mha_causal", mha(batch_first=True), [torch.randn(B, L, E)], {"batch_first": True},
    run=lambda m, x: m(x, x, x, attn_mask=causal_float(L, L))))

# ---- TransformerEncoderLayer ----------------------------------------------------------------
D, NH, FF = 8, 2, 12


def layer(norm_first, activation, batch_first):
    m = nn.TransformerEncoderLayer(D, NH, FF, dropout=0.0, activation=activation,
                                   batch_first=batch_first, norm_first=norm_first)
    return randomize(m).train()


def layer_attrs(norm_first, activation, batch_first):
    return {"norm_first": norm_first, "activation": activation, "batch_first": batch_first}


pad = torch.zeros(B, L, dtype=torch.bool)
pad[0, 2:] = True
pad[1, 1] = True

# Pre- and post-norm, relu and gelu, sequence-first and batch_first, causal and padding masks.
for norm_first, act, bf, masking in ((False, "relu", False, "causal"),
                                     (True, "gelu", True, "causal"),
                                     (False, "gelu", True, "padding"),
                                     (True, "relu", False, "padding")):
    name = f"layer_{'pre' if norm_first else 'post'}_{act}_{masking}"
    x = torch.randn(B, L, D) if bf else torch.randn(L, B, D)
    if masking == "causal":
        cases.append(module_case(name, layer(norm_first, act, bf), [x],
                                 layer_attrs(norm_first, act, bf),
                                 run=lambda m, x: m(x, src_mask=causal_float(L, L))))
    else:
        cases.append(module_case(name, layer(norm_first, act, bf), [x, pad],
                                 layer_attrs(norm_first, act, bf),
                                 run=lambda m, x, p: m(x, src_key_padding_mask=p)))

# Additive float src_mask and a bool padding mask together.
cases.append(module_case(
    "layer_post_relu_float_mask_padding", layer(False, "relu", False),
    [torch.randn(L, B, D), 0.5 * torch.randn(L, L), pad], layer_attrs(False, "relu", False),
    run=lambda m, x, am, p: m(x, src_mask=am, src_key_padding_mask=p)))

# ---- TransformerEncoder: 2 pre-norm GELU layers (W4's block) and a final LayerNorm ---------
enc = nn.TransformerEncoder(
    nn.TransformerEncoderLayer(D, NH, FF, dropout=0.0, activation="gelu", batch_first=True,
                               norm_first=True),
    2, norm=nn.LayerNorm(D))
randomize(enc).train()
with torch.no_grad():
    enc.norm.weight.copy_(1 + 0.3 * torch.randn(D))
cases.append(module_case(
    "encoder_prenorm_gelu_causal_norm", enc, [torch.randn(B, L, D)],
    {"num_layers": 2, "norm_first": True, "activation": "gelu", "batch_first": True},
    run=lambda m, x: m(x, mask=causal_float(L, L))))
enc2 = randomize(nn.TransformerEncoder(
    nn.TransformerEncoderLayer(D, NH, FF, dropout=0.0), 2)).train()
cases.append(module_case(
    "encoder_postnorm_relu_padding", enc2, [torch.randn(L, B, D), pad],
    {"num_layers": 2, "norm_first": False, "activation": "relu", "batch_first": False},
    run=lambda m, x, p: m(x, src_key_padding_mask=p)))


# ---- scaled_dot_product_attention: the explicit math (torch 1.13 has no F.sdpa) -------------
class Sdpa(nn.Module):
    """softmax(q k^T / sqrt(E) + mask) v; bool masks keep where true (F.sdpa's convention)."""

    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def forward(self, q, k, v, mask=None):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        if self.kind == "causal":
            keep = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool).tril()
            scores = scores.masked_fill(~keep, float("-inf"))
        elif self.kind == "bool":
            scores = scores.masked_fill(~mask, float("-inf"))
        elif self.kind == "additive":
            scores = scores + mask
        return torch.softmax(scores, -1) @ v


qkv = [torch.randn(2, 2, 4, 6), torch.randn(2, 2, 5, 6), torch.randn(2, 2, 5, 3)]
cases.append(module_case("sdpa_plain", Sdpa("plain"), qkv))
cases.append(module_case("sdpa_causal", Sdpa("causal"), qkv))
keep = torch.rand(2, 1, 4, 5) < 0.7
keep[..., 0] = True
cases.append(module_case("sdpa_bool", Sdpa("bool"), qkv + [keep]))
cases.append(module_case("sdpa_additive", Sdpa("additive"), qkv + [0.5 * torch.randn(4, 5)]))

save("transformer", cases)
