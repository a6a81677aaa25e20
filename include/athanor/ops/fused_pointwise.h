// fused_pointwise: a small program of element-wise steps run as one kernel, so a chain such as
// ReLU's backward (gt, to_dtype, mul) reads each input once and writes one result, instead of
// writing and re-reading every intermediate. The graph compiler's `fuse` pass builds these
// programs (athanor/graph/passes.h); the op is an ordinary registry op, so a graph holding one
// replays, prints and verifies like any other.
//
//   PointwiseProgram p;
//   p.inputs = {kFloat32, kFloat32};                       // registers 0 (grad) and 1 (out)
//   int32_t zero = p.add_input(kFloat32);                  // register 2: a 0-d scalar
//   int32_t mask = p.add_step(PointwiseCode::Gt, 1, zero);  // out > 0, bool
//   int32_t f = p.add_step(PointwiseCode::ToFloat, mask);  // 1.0 / 0.0
//   p.add_step(PointwiseCode::Mul, 0, f);                  // the last step is the result
//   Tensor grad = randn({4}), out = relu(randn({4}));
//   Tensor r = fused_pointwise({grad, out, zeros({})}, p);
//   assert(equal(r, grad * gt(out, 0.0).to(kFloat32)));
//
// Contract:
// - Registers: the inputs first (in order), then one per step. Inputs are float32 or bool; an
//   input is either a 0-d tensor (broadcast to every element) or has the result's shape.
// - Each step computes exactly what the eager op computes for float32, bit for bit: the same
//   IEEE operation per element, no contraction into FMAs. Add is `a + alpha * b` as add's
//   kernel is (alpha 1 and -1 are exact: sub is add with alpha -1).
// - The program travels as bytecode in the attributes (FusedPointwiseAttrs::code), so equal
//   programs compare and hash equal (CSE, graph comparison) and a node owns its program.
// - Bad programs (a register read before it is written, a dtype a step does not take) and inputs
//   that do not match them throw ValueError / DTypeError / ShapeError naming fused_pointwise.
// Not differentiable: it exists after tracing, where the backward is already in the graph.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "athanor/ops/op.h"
#include "athanor/tensor/tensor.h"

namespace ath {

enum class PointwiseCode : uint8_t {
  Add,      // f32 a + alpha * b
  Mul,      // f32 a * b
  Div,      // f32 a / b
  Neg,      // f32 -a
  Gt,       // bool a > b (f32 operands)
  Lt,       // bool a < b
  Ge,       // bool a >= b
  Le,       // bool a <= b
  Eq,       // bool a == b
  Ne,       // bool a != b
  ToFloat,  // f32 from bool: 1 or 0
};

struct PointwiseStep {
  PointwiseCode code = PointwiseCode::Add;
  int32_t a = -1, b = -1;  // registers (b unused by unary steps)
  float alpha = 1.0f;      // Add only
};

struct PointwiseProgram {
  std::vector<DType> inputs;  // kFloat32 or kBool
  std::vector<PointwiseStep> steps;

  int32_t add_input(DType dtype);
  // Appends a step and returns its register.
  int32_t add_step(PointwiseCode code, int32_t a, int32_t b = -1, float alpha = 1.0f);
  int32_t num_registers() const { return static_cast<int32_t>(inputs.size() + steps.size()); }
  DType register_dtype(int32_t r) const;
  DType result_dtype() const { return register_dtype(num_registers() - 1); }

  // Checks every step's operands (registers defined before it, dtypes it takes); ValueError or
  // DTypeError naming the step otherwise.
  void validate() const;
  std::string encode() const;
  static PointwiseProgram decode(std::string_view code);  // validates
  // One line, registers as r<i>: "r3=gt(r1, r2); r4=to_float(r3); r5=mul(r0, r4)".
  std::string to_string() const;
};

const char* pointwise_code_name(PointwiseCode code);
// The step's result dtype: kBool for comparisons, else kFloat32.
DType pointwise_code_dtype(PointwiseCode code);

struct FusedPointwiseAttrs {
  std::string code;  // PointwiseProgram::encode()
  bool operator==(const FusedPointwiseAttrs&) const = default;
};

const Op<FusedPointwiseAttrs>& op_fused_pointwise();
Tensor fused_pointwise(std::span<const Tensor> inputs, const PointwiseProgram& program);
inline Tensor fused_pointwise(std::initializer_list<Tensor> inputs,
                              const PointwiseProgram& program) {
  return fused_pointwise(std::span<const Tensor>(inputs.begin(), inputs.size()), program);
}

}  // namespace ath
