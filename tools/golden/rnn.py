"""Goldens for the recurrent layers: LSTM, GRU, LSTMCell, GRUCell (float32).

Run with Debian's torch: /usr/bin/python3 tools/golden/rnn.py
Writes tests/golden/rnn.json, read by tests/nn/test_rnn.cpp. Each case's attrs hold the layer's
constructor arguments ("kind" names the class) and "train" (the module's mode); its inputs are
x and, when "state" is set, the initial state (h0[, c0]); its outputs are output, h_n[, c_n]
(cells: h'[, c']).
"""
import torch
import torch.nn as nn

from common import save
from module_case import module_case

torch.manual_seed(0)
cases = []


def rnn_case(name, kind, x, state=None, train=True, **kw):
    cls = {"LSTM": nn.LSTM, "GRU": nn.GRU}[kind]
    m = cls(**kw)
    m.train(train)
    attrs = dict(kw, kind=kind, train=train, state=state is not None)
    if state is None:
        cases.append(module_case(name, m, [x], attrs))
    elif kind == "LSTM":
        cases.append(module_case(name, m, [x] + list(state), attrs,
                                 run=lambda mod, x, h, c: mod(x, (h, c))))
    else:
        cases.append(module_case(name, m, [x, state], attrs))


def cell_case(name, kind, x, state=None, **kw):
    cls = {"LSTMCell": nn.LSTMCell, "GRUCell": nn.GRUCell}[kind]
    m = cls(**kw)
    attrs = dict(kw, kind=kind, state=state is not None)
    if state is None:
        cases.append(module_case(name, m, [x], attrs))
    elif kind == "LSTMCell":
        cases.append(module_case(name, m, [x] + list(state), attrs,
                                 run=lambda mod, x, h, c: mod(x, (h, c))))
    else:
        cases.append(module_case(name, m, [x, state], attrs))


def randn(*shape):
    return torch.randn(*shape)


for kind in ["LSTM", "GRU"]:
    k = kind.lower()
    g = 2 if kind == "LSTM" else 1  # number of state tensors

    def st(*shape):
        s = [randn(*shape) * 0.5 for _ in range(g)]
        return s if kind == "LSTM" else s[0]

    rnn_case(f"{k}_basic", kind, randn(5, 2, 3), input_size=3, hidden_size=5)
    rnn_case(f"{k}_two_layers_bidirectional_batch_first_state", kind, randn(3, 4, 3),
             st(4, 3, 3), input_size=3, hidden_size=3, num_layers=2, bidirectional=True,
             batch_first=True)
    rnn_case(f"{k}_bidirectional_seq_first_state", kind, randn(4, 3, 2), st(2, 3, 4),
             input_size=2, hidden_size=4, bidirectional=True)
    rnn_case(f"{k}_no_bias_two_layers", kind, randn(4, 2, 3), input_size=3, hidden_size=4,
             num_layers=2, bias=False)
    rnn_case(f"{k}_unbatched_state", kind, randn(5, 3), st(2, 4), input_size=3, hidden_size=4,
             num_layers=2)
    rnn_case(f"{k}_unbatched_batch_first_bidirectional", kind, randn(4, 3), input_size=3,
             hidden_size=4, batch_first=True, bidirectional=True)
    rnn_case(f"{k}_dropout0_train", kind, randn(3, 2, 4), input_size=4, hidden_size=3,
             num_layers=2, dropout=0.0)
    rnn_case(f"{k}_dropout_eval", kind, randn(3, 2, 4), st(2, 2, 3), train=False, input_size=4,
             hidden_size=3, num_layers=2, dropout=0.5)

cell_case("lstm_cell_state", "LSTMCell", randn(3, 4), [randn(3, 5), randn(3, 5)], input_size=4,
          hidden_size=5)
cell_case("lstm_cell_no_state", "LSTMCell", randn(3, 4), input_size=4, hidden_size=5)
cell_case("lstm_cell_no_bias_unbatched", "LSTMCell", randn(4), [randn(5), randn(5)],
          input_size=4, hidden_size=5, bias=False)
cell_case("gru_cell_state", "GRUCell", randn(3, 4), randn(3, 5), input_size=4, hidden_size=5)
cell_case("gru_cell_no_state", "GRUCell", randn(3, 4), input_size=4, hidden_size=5)
cell_case("gru_cell_no_bias_unbatched", "GRUCell", randn(4), randn(5), input_size=4,
          hidden_size=5, bias=False)

save("rnn", cases)
