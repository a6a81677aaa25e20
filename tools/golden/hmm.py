"""Golden values for ath::seq::CategoricalHMM and GaussianHMM (diagonal covariance): hmmlearn
0.3.3 in float64, started from fixed parameters (init_params=""), on random sequences sampled
from a model other than the starting one (so that EM has something to move).

Run with hmmlearn from PyPI:
    /work/venv/bin/python tools/golden/hmm.py
Writes tests/golden/hmm.json, read by tests/nn/test_hmm.cpp.

Every case is computed with implementation="log" and checked here against "scaling" (they agree
to ~1e-12), so either is what the C++ side matches. Cases: K = 2..4 states, M = 3..5 symbols or
D = 1..3 dimensions, several sequences per case including ones of length 1; one categorical and
one Gaussian model have zeros in startprob and transmat (which EM keeps at zero).

Each case: attrs {kind ("categorical" | "gaussian"), lengths, conv_n_iter, conv_tol};
tensors: the starting parameters (startprob [K], transmat [K, K], and emissionprob [K, M] or
means [K, D] and covars [K, D]), X ([n] int64 symbols or [n, D]), score (0-dim), posteriors
[n, K], viterbi_logprob (0-dim), viterbi_path [n] (int64); the parameters after EM as
fit1_<param> (n_iter=1), fit5_<param> (n_iter=5, tol=-1e300 so all five run) with fit5_history
[5], and conv_<param>, conv_history after n_iter=conv_n_iter at hmmlearn's default tol 1e-2
(stops early once an iteration gains less).
"""
import numpy as np
import torch
from hmmlearn import hmm

from common import save

rng = np.random.RandomState(0)
cases = []


def random_stochastic(rows, cols, zeros=()):
    m = rng.uniform(0.2, 1.0, size=(rows, cols))
    for idx in zeros:
        m[idx] = 0.0
    return m / m.sum(axis=1, keepdims=True)


def make(kind, params, n_iter, tol, impl):
    k = params["startprob"].shape[0]
    if kind == "categorical":
        model = hmm.CategoricalHMM(n_components=k, n_features=params["emissionprob"].shape[1],
                                   init_params="", params="ste", n_iter=n_iter, tol=tol,
                                   implementation=impl)
        model.emissionprob_ = params["emissionprob"].copy()
    else:
        model = hmm.GaussianHMM(n_components=k, covariance_type="diag", init_params="",
                                params="stmc", n_iter=n_iter, tol=tol, implementation=impl)
        model.means_ = params["means"].copy()
        model.covars_ = params["covars"].copy()
    model.startprob_ = params["startprob"].copy()
    model.transmat_ = params["transmat"].copy()
    return model


def fitted(model, kind):
    out = {"startprob": model.startprob_, "transmat": model.transmat_}
    if kind == "categorical":
        out["emissionprob"] = model.emissionprob_
    else:
        out["means"] = model.means_
        out["covars"] = model._covars_  # diag: [K, D] (covars_ is the full [K, D, D])
    return out


def close(a, b):
    return np.allclose(a, b, rtol=1e-9, atol=1e-12)


def run(name, kind, params, true_params, lengths, conv_n_iter=100):
    # Data from true_params, one sample() per sequence (hmmlearn samples one sequence a call).
    truth = make(kind, true_params, 1, 0, "log")
    xs = [truth.sample(n, random_state=rng)[0] for n in lengths]
    x = np.concatenate(xs)  # [n, 1] int symbols or [n, D]
    results = {}
    for impl in ("log", "scaling"):
        m = make(kind, params, 1, 0, impl)
        score, post = m.score_samples(x, lengths)
        vit_lp, path = m.decode(x, lengths, algorithm="viterbi")
        r = {"score": score, "posteriors": post, "viterbi_logprob": vit_lp, "viterbi_path": path}
        for tag, n_iter, tol in (("fit1", 1, 0.0), ("fit5", 5, -1e300),
                                 ("conv", conv_n_iter, 1e-2)):
            m = make(kind, params, n_iter, tol, impl)
            m.fit(x, lengths)
            for p, v in fitted(m, kind).items():
                r[f"{tag}_{p}"] = v
            if tag != "fit1":
                r[f"{tag}_history"] = np.array(m.monitor_.history)
        results[impl] = r
    log, scaling = results["log"], results["scaling"]
    for key in log:
        if key == "viterbi_path":
            assert (log[key] == scaling[key]).all(), (name, key)
        else:
            assert np.shape(log[key]) == np.shape(scaling[key]) and close(log[key], scaling[key]), (
                name, key, log[key], scaling[key])
    assert len(log["fit5_history"]) == 5
    assert (np.diff(log["fit5_history"]) >= -1e-9).all(), name
    tensors = {k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in params.items()}
    tensors["X"] = torch.from_numpy(x[:, 0].astype(np.int64) if kind == "categorical" else x)
    for k, v in log.items():
        if k == "viterbi_path":
            tensors[k] = torch.from_numpy(np.asarray(v, dtype=np.int64))
        else:
            tensors[k] = torch.tensor(np.asarray(v, dtype=np.float64))
    attrs = {"kind": kind, "lengths": list(lengths), "conv_n_iter": conv_n_iter,
             "conv_tol": 1e-2}
    cases.append({"name": name, "attrs": attrs, "tensors": tensors})
    print(f"{name}: n={len(x)} score={log['score']:.6f} conv iterations="
          f"{len(log['conv_history'])}")


def categorical(k, m, zeros=(), start_zero=None):
    start = rng.uniform(0.2, 1.0, size=k)
    if start_zero is not None:
        start[start_zero] = 0.0
    return {"startprob": start / start.sum(), "transmat": random_stochastic(k, k, zeros),
            "emissionprob": random_stochastic(k, m)}


def gaussian(k, d, zeros=(), start_zero=None, spread=3.0):
    p = categorical(k, 1, zeros, start_zero)
    del p["emissionprob"]
    p["means"] = rng.normal(0.0, spread, size=(k, d))
    p["covars"] = rng.uniform(0.3, 2.0, size=(k, d))
    return p


run("cat_k2_m3", "categorical", categorical(2, 3), categorical(2, 3), [1, 7, 15])
run("cat_k3_m4_zeros", "categorical", categorical(3, 4, zeros=[(0, 2), (2, 1)], start_zero=1),
    categorical(3, 4, zeros=[(0, 2), (2, 1)], start_zero=1), [20, 1, 9, 30])
run("cat_k4_m5", "categorical", categorical(4, 5), categorical(4, 5), [50, 1, 12])
run("gauss_k2_d1", "gaussian", gaussian(2, 1), gaussian(2, 1), [1, 10, 25])
run("gauss_k3_d2_zeros", "gaussian", gaussian(3, 2, zeros=[(1, 0)], start_zero=2),
    gaussian(3, 2, zeros=[(1, 0)], start_zero=2), [15, 1, 30])
run("gauss_k4_d3", "gaussian", gaussian(4, 3), gaussian(4, 3), [40, 8, 1, 20])
# One long sequence: the scaled recursion over hundreds of frames.
run("gauss_k2_d2_long", "gaussian", gaussian(2, 2), gaussian(2, 2), [400])

save("hmm", cases)
