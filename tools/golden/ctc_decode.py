"""Reference outputs for CTC beam search: pyctcdecode 0.5.0's decoder (no language model, no
pruning: beam_prune_logp and token_min_logp at -1000) on random emissions, its best label
sequence per sample with that sequence's exact CTC log-probability (torch's ctc_loss), and the
greedy (best path) decoding. pyctcdecode ranks beams by an approximate score, so its answer is
a bar to clear, not the answer: athanor's prefix beam search must find a sequence at least as
probable.

Run with PyPI's packages: /work/venv/bin/python tools/golden/ctc_decode.py
(pip install pyctcdecode into the venv first). Writes tests/golden/ctc_decode.json, read by
tests/nn/test_ctc_decode.cpp.

Each case: attrs {beam_width}; tensors log_probs [T, C] (class 0 the blank), beam [L] (pyctcdecode's
best labels), beam_log_prob (their exact log-probability) and greedy [G].
"""
import string

import numpy as np
import torch
from pyctcdecode import build_ctcdecoder

from common import save

torch.manual_seed(0)
cases = []
for i, (frames, classes, beam, peak) in enumerate(
        [(30, 6, 16, 1.0), (30, 6, 4, 1.0), (50, 8, 8, 2.0), (20, 4, 32, 0.5), (60, 12, 10, 3.0),
         (40, 6, 1, 1.0)]):
    labels = [""] + list(string.ascii_lowercase[:classes - 1])
    decoder = build_ctcdecoder(labels)
    for sample in range(3):
        lp = torch.log_softmax(torch.randn(frames, classes, dtype=torch.float64) * peak, dim=1)
        text = decoder.decode(lp.numpy().astype(np.float64), beam_width=beam,
                              beam_prune_logp=-1000.0, token_min_logp=-1000.0)
        best = [labels.index(ch) for ch in text]
        beam_ll = -torch.nn.functional.ctc_loss(
            lp.unsqueeze(1), torch.tensor([best]), [frames], [len(best)], reduction="sum")
        path = lp.argmax(dim=1).tolist()
        greedy = [c for j, c in enumerate(path) if c != 0 and (j == 0 or path[j - 1] != c)]
        cases.append({"name": f"case{i}_sample{sample}", "attrs": {"beam_width": beam},
                      "tensors": {"log_probs": lp, "beam": torch.tensor(best, dtype=torch.int64),
                                  "beam_log_prob": beam_ll,
                                  "greedy": torch.tensor(greedy, dtype=torch.int64)}})
save("ctc_decode", cases)
