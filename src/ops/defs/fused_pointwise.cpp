// fused_pointwise: the program's bytecode and the op definition (the kernel is in
// kernels/cpu/fused_pointwise.cpp).
#include "athanor/ops/fused_pointwise.h"

#include <fmt/format.h>

#include <cstring>

#include "athanor/core/error.h"
#include "athanor/ops/dispatch.h"

namespace ath {

namespace {

constexpr int kMaxRegisters = 255;  // operands are one byte in the bytecode
constexpr uint8_t kNoOperand = 255;

bool is_unary(PointwiseCode c) { return c == PointwiseCode::Neg || c == PointwiseCode::ToFloat; }

DType operand_dtype(PointwiseCode c) { return c == PointwiseCode::ToFloat ? kBool : kFloat32; }

}  // namespace

const char* pointwise_code_name(PointwiseCode code) {
  switch (code) {
    case PointwiseCode::Add:
      return "add";
    case PointwiseCode::Mul:
      return "mul";
    case PointwiseCode::Div:
      return "div";
    case PointwiseCode::Neg:
      return "neg";
    case PointwiseCode::Gt:
      return "gt";
    case PointwiseCode::Lt:
      return "lt";
    case PointwiseCode::Ge:
      return "ge";
    case PointwiseCode::Le:
      return "le";
    case PointwiseCode::Eq:
      return "eq";
    case PointwiseCode::Ne:
      return "ne";
    case PointwiseCode::ToFloat:
      return "to_float";
  }
  return "?";
}

DType pointwise_code_dtype(PointwiseCode code) {
  switch (code) {
    case PointwiseCode::Gt:
    case PointwiseCode::Lt:
    case PointwiseCode::Ge:
    case PointwiseCode::Le:
    case PointwiseCode::Eq:
    case PointwiseCode::Ne:
      return kBool;
    default:
      return kFloat32;
  }
}

int32_t PointwiseProgram::add_input(DType dtype) {
  ATH_CHECK(steps.empty(), ValueError, "fused_pointwise: inputs must be added before any step");
  inputs.push_back(dtype);
  return static_cast<int32_t>(inputs.size() - 1);
}

int32_t PointwiseProgram::add_step(PointwiseCode code, int32_t a, int32_t b, float alpha) {
  steps.push_back({code, a, b, alpha});
  return num_registers() - 1;
}

DType PointwiseProgram::register_dtype(int32_t r) const {
  ATH_CHECK(r >= 0 && r < num_registers(), ValueError,
            "fused_pointwise: register %{} does not exist (the program has {})", r,
            num_registers());
  const auto i = static_cast<std::size_t>(r);
  return i < inputs.size() ? inputs[i] : pointwise_code_dtype(steps[i - inputs.size()].code);
}

void PointwiseProgram::validate() const {
  ATH_CHECK(!steps.empty(), ValueError, "fused_pointwise: the program has no steps");
  ATH_CHECK(num_registers() <= kMaxRegisters, ValueError,
            "fused_pointwise: {} registers, at most {}", num_registers(), kMaxRegisters);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    ATH_CHECK(inputs[i] == kFloat32 || inputs[i] == kBool, DTypeError,
              "fused_pointwise: input {} is {}; programs take float32 and bool", i,
              dtype_name(inputs[i]));
  }
  for (std::size_t s = 0; s < steps.size(); ++s) {
    const PointwiseStep& st = steps[s];
    const auto self = static_cast<int32_t>(inputs.size() + s);
    const int operands = is_unary(st.code) ? 1 : 2;
    for (int k = 0; k < operands; ++k) {
      const int32_t r = k == 0 ? st.a : st.b;
      ATH_CHECK(r >= 0 && r < self, ValueError,
                "fused_pointwise: step {} ({}) reads register %{}, which is not defined before it",
                s, pointwise_code_name(st.code), r);
      ATH_CHECK(register_dtype(r) == operand_dtype(st.code), DTypeError,
                "fused_pointwise: step {} ({}) takes {} operands, register %{} is {}", s,
                pointwise_code_name(st.code), dtype_name(operand_dtype(st.code)), r,
                dtype_name(register_dtype(r)));
    }
  }
}

// Layout: [#inputs] [dtype]... then per step [code] [a] [b] [alpha: 4 bytes].
std::string PointwiseProgram::encode() const {
  validate();
  std::string out;
  out.push_back(static_cast<char>(inputs.size()));
  for (DType d : inputs) out.push_back(static_cast<char>(d));
  for (const PointwiseStep& s : steps) {
    out.push_back(static_cast<char>(s.code));
    out.push_back(static_cast<char>(s.a));
    out.push_back(static_cast<char>(is_unary(s.code) ? kNoOperand : s.b));
    char alpha[sizeof(float)];
    std::memcpy(alpha, &s.alpha, sizeof alpha);
    out.append(alpha, sizeof alpha);
  }
  return out;
}

PointwiseProgram PointwiseProgram::decode(std::string_view code) {
  constexpr std::size_t kStepBytes = 3 + sizeof(float);
  ATH_CHECK(!code.empty(), ValueError, "fused_pointwise: empty program");
  const auto n = static_cast<std::size_t>(static_cast<uint8_t>(code[0]));
  ATH_CHECK(code.size() >= 1 + n && (code.size() - 1 - n) % kStepBytes == 0, ValueError,
            "fused_pointwise: malformed program of {} bytes", code.size());
  PointwiseProgram p;
  for (std::size_t i = 0; i < n; ++i) {
    const auto d = static_cast<uint8_t>(code[1 + i]);
    ATH_CHECK(d == static_cast<uint8_t>(kFloat32) || d == static_cast<uint8_t>(kBool), DTypeError,
              "fused_pointwise: input {} has dtype code {}; programs take float32 and bool", i, d);
    p.inputs.push_back(static_cast<DType>(d));
  }
  for (std::size_t at = 1 + n; at < code.size(); at += kStepBytes) {
    const auto c = static_cast<uint8_t>(code[at]);
    ATH_CHECK(c <= static_cast<uint8_t>(PointwiseCode::ToFloat), ValueError,
              "fused_pointwise: unknown step code {}", c);
    PointwiseStep s{.code = static_cast<PointwiseCode>(c),
                    .a = static_cast<uint8_t>(code[at + 1]),
                    .b = static_cast<uint8_t>(code[at + 2])};
    if (is_unary(s.code)) s.b = -1;
    std::memcpy(&s.alpha, code.data() + at + 3, sizeof(float));
    p.steps.push_back(s);
  }
  p.validate();
  return p;
}

std::string PointwiseProgram::to_string() const {
  std::string s;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const PointwiseStep& st = steps[i];
    if (i > 0) s += "; ";
    s += fmt::format("r{}={}(r{}", inputs.size() + i, pointwise_code_name(st.code), st.a);
    if (!is_unary(st.code)) s += fmt::format(", r{}", st.b);
    if (st.code == PointwiseCode::Add && st.alpha != 1.0f) s += fmt::format(", alpha={}", st.alpha);
    s += ")";
  }
  return s;
}

const Op<FusedPointwiseAttrs>& op_fused_pointwise() {
  static const auto& op = define_op<FusedPointwiseAttrs>({
      .name = "fused_pointwise",
      .kind = OpKind::Pointwise,
      .num_inputs = -1,
      .promote_inputs = 0,  // the program says each input's dtype
      .infer =
          [](TensorSpan in, const FusedPointwiseAttrs& a) {
            const PointwiseProgram p = PointwiseProgram::decode(a.code);
            ATH_CHECK(in.size() == p.inputs.size(), ValueError,
                      "fused_pointwise: the program takes {} inputs, got {}", p.inputs.size(),
                      in.size());
            Shape shape;
            bool have_shape = false;
            for (std::size_t i = 0; i < in.size(); ++i) {
              ATH_CHECK(in[i].dtype() == p.inputs[i], DTypeError,
                        "fused_pointwise: input {} is {}, the program expects {}", i,
                        dtype_name(in[i].dtype()), dtype_name(p.inputs[i]));
              if (in[i].dim() == 0) continue;  // a scalar, broadcast
              if (!have_shape) {
                shape = in[i].shape();
                have_shape = true;
              }
              ATH_CHECK(in[i].shape() == shape, ShapeError,
                        "fused_pointwise: input {} has shape {}, input 0's non-scalar shape is {} "
                        "(only 0-d inputs broadcast)",
                        i, in[i].shape(), shape);
            }
            // The kernel is registered once (float32) and reads each input as its dtype.
            return OutputSpec{{{shape, p.result_dtype()}}, kFloat32};
          },
      .not_differentiable = "runs inside a compiled graph, whose backward is already recorded",
  });
  return op;
}

Tensor fused_pointwise(std::span<const Tensor> inputs, const PointwiseProgram& program) {
  return call1(op_fused_pointwise(), inputs, FusedPointwiseAttrs{program.encode()});
}

}  // namespace ath
