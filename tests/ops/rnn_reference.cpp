#include "ops/rnn_reference.h"

#include <cmath>

#include "support/reference.h"

namespace ath::testing {

namespace {

double sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Layout of a sequence tensor: [T, B, X], or [B, T, X] with batch_first.
struct Layout {
  int64_t steps, batch, x;
  bool bf;
  int64_t at(int64_t t, int64_t b, int64_t j) const {
    return bf ? (b * steps + t) * x + j : (t * batch + b) * x + j;
  }
  Shape shape(int64_t width) const {
    return bf ? Shape{batch, steps, width} : Shape{steps, batch, width};
  }
};

Layout layout_of(const Tensor& xg, bool bf) {
  return {xg.shape()[bf ? 1 : 0], xg.shape()[bf ? 0 : 1], xg.shape()[2], bf};
}

// Step t's rows [B, X] of a sequence.
Vec rows(const Vec& v, const Layout& l, int64_t t) {
  Vec out(static_cast<std::size_t>(l.batch * l.x));
  for (int64_t b = 0; b < l.batch; ++b) {
    for (int64_t j = 0; j < l.x; ++j) out[b * l.x + j] = v[l.at(t, b, j)];
  }
  return out;
}

void put_rows(Vec& v, const Layout& l, int64_t t, const Vec& r) {
  for (int64_t b = 0; b < l.batch; ++b) {
    for (int64_t j = 0; j < l.x; ++j) v[l.at(t, b, j)] = r[b * l.x + j];
  }
}

// a [B, K] times w^T, w [N, K] -> [B, N] (plus bias [N] when given).
Vec times_wt(const Vec& a, const Vec& w, int64_t B, int64_t K, int64_t N,
             const Vec* bias = nullptr) {
  Vec out(static_cast<std::size_t>(B * N));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t n = 0; n < N; ++n) {
      double s = bias ? (*bias)[n] : 0.0;
      for (int64_t k = 0; k < K; ++k) s += a[b * K + k] * w[n * K + k];
      out[b * N + n] = s;
    }
  }
  return out;
}

// d [B, N] times w [N, K] -> [B, K].
Vec times_w(const Vec& d, const Vec& w, int64_t B, int64_t N, int64_t K) {
  Vec out(static_cast<std::size_t>(B * K));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t k = 0; k < K; ++k) {
      double s = 0;
      for (int64_t n = 0; n < N; ++n) s += d[b * N + n] * w[n * K + k];
      out[b * K + k] = s;
    }
  }
  return out;
}

// acc [N, K] += d [B, N]^T a [B, K].
void add_outer(Vec& acc, const Vec& d, const Vec& a, int64_t B, int64_t N, int64_t K) {
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t b = 0; b < B; ++b) acc[n * K + k] += d[b * N + n] * a[b * K + k];
    }
  }
}

Vec add(const Vec& a, const Vec& b) {
  Vec out = a;
  for (std::size_t i = 0; i < a.size(); ++i) out[i] += b[i];
  return out;
}

}  // namespace

LstmStepRef lstm_step_ref(const Vec& pre, const Vec& c_prev, int64_t B, int64_t H) {
  LstmStepRef r{Vec(static_cast<std::size_t>(B * H)), Vec(static_cast<std::size_t>(B * H))};
  for (int64_t b = 0; b < B; ++b) {
    const double* p = pre.data() + b * 4 * H;
    for (int64_t j = 0; j < H; ++j) {
      const double i = sig(p[j]), f = sig(p[H + j]), g = std::tanh(p[2 * H + j]),
                   o = sig(p[3 * H + j]);
      const double c = f * c_prev[b * H + j] + i * g;
      r.c[b * H + j] = c;
      r.h[b * H + j] = o * std::tanh(c);
    }
  }
  return r;
}

LstmStepGradRef lstm_step_grad_ref(const Vec& dh, const Vec& dc, const Vec& pre, const Vec& c_prev,
                                   int64_t B, int64_t H) {
  LstmStepGradRef r{Vec(pre.size()), Vec(c_prev.size())};
  for (int64_t b = 0; b < B; ++b) {
    const double* p = pre.data() + b * 4 * H;
    double* dp = r.dpre.data() + b * 4 * H;
    for (int64_t j = 0; j < H; ++j) {
      const int64_t k = b * H + j;
      const double i = sig(p[j]), f = sig(p[H + j]), g = std::tanh(p[2 * H + j]),
                   o = sig(p[3 * H + j]);
      const double c = f * c_prev[k] + i * g, tc = std::tanh(c);
      // h = o tanh(c): dL/dc collects the direct dc and the path through h.
      const double dct = dc[k] + dh[k] * o * (1 - tc * tc);
      const double di = dct * g, df = dct * c_prev[k], dg = dct * i, do_ = dh[k] * tc;
      dp[j] = di * i * (1 - i);
      dp[H + j] = df * f * (1 - f);
      dp[2 * H + j] = dg * (1 - g * g);
      dp[3 * H + j] = do_ * o * (1 - o);
      r.dc_prev[k] = dct * f;
    }
  }
  return r;
}

Vec gru_step_ref(const Vec& xg, const Vec& hg, const Vec& h_prev, int64_t B, int64_t H) {
  Vec h(static_cast<std::size_t>(B * H));
  for (int64_t b = 0; b < B; ++b) {
    const double *x = xg.data() + b * 3 * H, *hh = hg.data() + b * 3 * H;
    for (int64_t j = 0; j < H; ++j) {
      const double r = sig(x[j] + hh[j]), z = sig(x[H + j] + hh[H + j]);
      const double n = std::tanh(x[2 * H + j] + r * hh[2 * H + j]);
      h[b * H + j] = (1 - z) * n + z * h_prev[b * H + j];
    }
  }
  return h;
}

GruStepGradRef gru_step_grad_ref(const Vec& dh, const Vec& xg, const Vec& hg, const Vec& h_prev,
                                 int64_t B, int64_t H) {
  GruStepGradRef g{Vec(xg.size()), Vec(hg.size()), Vec(h_prev.size())};
  for (int64_t b = 0; b < B; ++b) {
    const double *x = xg.data() + b * 3 * H, *hh = hg.data() + b * 3 * H;
    double *dx = g.dxg.data() + b * 3 * H, *dhh = g.dhg.data() + b * 3 * H;
    for (int64_t j = 0; j < H; ++j) {
      const int64_t k = b * H + j;
      const double r = sig(x[j] + hh[j]), z = sig(x[H + j] + hh[H + j]);
      const double n = std::tanh(x[2 * H + j] + r * hh[2 * H + j]);
      const double dn = dh[k] * (1 - z), dz = dh[k] * (h_prev[k] - n);
      const double dn_pre = dn * (1 - n * n);  // d of x_n + r * h_n
      const double dr = dn_pre * hh[2 * H + j];
      dx[j] = dhh[j] = dr * r * (1 - r);
      dx[H + j] = dhh[H + j] = dz * z * (1 - z);
      dx[2 * H + j] = dn_pre;
      dhh[2 * H + j] = dn_pre * r;
      g.dh_prev[k] = dh[k] * z;
    }
  }
  return g;
}

SeqRef lstm_sequence_ref(const Tensor& xg, const Tensor& w_hh, const Tensor& h0, const Tensor& c0,
                         bool reverse, bool batch_first) {
  const Layout lx = layout_of(xg, batch_first);
  const int64_t B = lx.batch, T = lx.steps, G = lx.x, H = G / 4;
  const Layout ly{T, B, H, batch_first};
  const Vec x = values(xg), w = values(w_hh);
  Vec h = values(h0), c = values(c0), y(static_cast<std::size_t>(T * B * H));
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = reverse ? T - 1 - s : s;
    LstmStepRef st = lstm_step_ref(add(rows(x, lx, t), times_wt(h, w, B, H, G)), c, B, H);
    h = st.h;
    c = st.c;
    put_rows(y, ly, t, h);
  }
  return {make_f64(ly.shape(H), y), make_f64({B, H}, h), make_f64({B, H}, c)};
}

SeqRef gru_sequence_ref(const Tensor& xg, const Tensor& w_hh, const Tensor& b_hh, const Tensor& h0,
                        bool reverse, bool batch_first) {
  const Layout lx = layout_of(xg, batch_first);
  const int64_t B = lx.batch, T = lx.steps, G = lx.x, H = G / 3;
  const Layout ly{T, B, H, batch_first};
  const Vec x = values(xg), w = values(w_hh), bias = values(b_hh);
  Vec h = values(h0), y(static_cast<std::size_t>(T * B * H));
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = reverse ? T - 1 - s : s;
    h = gru_step_ref(rows(x, lx, t), times_wt(h, w, B, H, G, &bias), h, B, H);
    put_rows(y, ly, t, h);
  }
  return {make_f64(ly.shape(H), y), make_f64({B, H}, h), Tensor()};
}

SeqGradRef lstm_sequence_grad_ref(const Tensor& dy, const Tensor& dh_n, const Tensor& dc_n,
                                  const Tensor& xg, const Tensor& w_hh, const Tensor& h0,
                                  const Tensor& c0, bool reverse, bool batch_first) {
  const Layout lx = layout_of(xg, batch_first);
  const int64_t B = lx.batch, T = lx.steps, G = lx.x, H = G / 4;
  const Layout ly{T, B, H, batch_first};
  const Vec x = values(xg), w = values(w_hh), gy = values(dy);
  // Forward, keeping every step's pre-activations and previous state.
  std::vector<Vec> pres, h_prevs, c_prevs;
  Vec h = values(h0), c = values(c0);
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = reverse ? T - 1 - s : s;
    pres.push_back(add(rows(x, lx, t), times_wt(h, w, B, H, G)));
    h_prevs.push_back(h);
    c_prevs.push_back(c);
    LstmStepRef st = lstm_step_ref(pres.back(), c, B, H);
    h = st.h;
    c = st.c;
  }
  // Backward through time.
  Vec dxg(x.size()), dw(w.size()), dh = values(dh_n), dc = values(dc_n);
  for (int64_t s = T - 1; s >= 0; --s) {
    const int64_t t = reverse ? T - 1 - s : s;
    LstmStepGradRef g = lstm_step_grad_ref(add(rows(gy, ly, t), dh), dc, pres[s], c_prevs[s], B, H);
    put_rows(dxg, lx, t, g.dpre);
    add_outer(dw, g.dpre, h_prevs[s], B, G, H);
    dh = times_w(g.dpre, w, B, G, H);
    dc = g.dc_prev;
  }
  return {make_f64(xg.shape(), dxg), make_f64(w_hh.shape(), dw), Tensor(), make_f64({B, H}, dh),
          make_f64({B, H}, dc)};
}

SeqGradRef gru_sequence_grad_ref(const Tensor& dy, const Tensor& dh_n, const Tensor& xg,
                                 const Tensor& w_hh, const Tensor& b_hh, const Tensor& h0,
                                 bool reverse, bool batch_first) {
  const Layout lx = layout_of(xg, batch_first);
  const int64_t B = lx.batch, T = lx.steps, G = lx.x, H = G / 3;
  const Layout ly{T, B, H, batch_first};
  const Vec x = values(xg), w = values(w_hh), bias = values(b_hh), gy = values(dy);
  std::vector<Vec> xgs, hgs, h_prevs;
  Vec h = values(h0);
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = reverse ? T - 1 - s : s;
    xgs.push_back(rows(x, lx, t));
    hgs.push_back(times_wt(h, w, B, H, G, &bias));
    h_prevs.push_back(h);
    h = gru_step_ref(xgs.back(), hgs.back(), h, B, H);
  }
  Vec dxg(x.size()), dw(w.size()), db(bias.size()), dh = values(dh_n);
  for (int64_t s = T - 1; s >= 0; --s) {
    const int64_t t = reverse ? T - 1 - s : s;
    GruStepGradRef g =
        gru_step_grad_ref(add(rows(gy, ly, t), dh), xgs[s], hgs[s], h_prevs[s], B, H);
    put_rows(dxg, lx, t, g.dxg);
    add_outer(dw, g.dhg, h_prevs[s], B, G, H);
    for (int64_t b = 0; b < B; ++b) {
      for (int64_t k = 0; k < G; ++k) db[k] += g.dhg[b * G + k];
    }
    dh = add(g.dh_prev, times_w(g.dhg, w, B, G, H));
  }
  return {make_f64(xg.shape(), dxg), make_f64(w_hh.shape(), dw), make_f64({G}, db),
          make_f64({B, H}, dh), Tensor()};
}

}  // namespace ath::testing
