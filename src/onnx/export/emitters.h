// The exporter's op table: per registry op, the function that writes a recorded node as ONNX
// nodes. One family per emit_*.cpp file; emit_table.cpp gathers them. An emitter reads the
// node through EmitContext (inputs as ONNX names, typed attributes, batch-dependent dims) and
// names every output it produces with ctx.out(i) (or ctx.bind_out); an output no live node
// reads may be left unnamed. It calls ctx.unsupported(why) for a configuration ONNX cannot
// express; the export then fails listing it with the other unsupported nodes.
#pragma once

#include <unordered_map>

#include "athanor/ops/op.h"
#include "emit_context.h"

namespace ath::onnx::detail {

using EmitFn = void (*)(EmitContext&);
struct Emitter {
  EmitFn fn = nullptr;
  // The emitter handles attributes that change with the batch size (a view's target shape,
  // an expand's sizes, a slice to the end of the batch dim); for the others such a node fails
  // the export under dynamic_batch.
  bool batch_attrs = false;
};
using EmitTable = std::unordered_map<const OpDef*, Emitter>;

const EmitTable& emit_table();

void add_elementwise_emitters(EmitTable& t);  // arithmetic, unary math, comparisons, casts
void add_activation_emitters(EmitTable& t);   // relu, gelu, silu, softmax...
void add_linalg_emitters(EmitTable& t);       // mm, bmm, matmul, addmm, linear
void add_nn_emitters(EmitTable& t);           // convolution, pools, norms, embedding
void add_shape_emitters(EmitTable& t);        // view, permute, expand, slice, select, cat...
void add_reduce_emitters(EmitTable& t);       // sum, mean, amax, amin, argmax...
void add_attention_emitters(EmitTable& t);    // split_heads, merge_heads, attention_softmax
void add_rnn_emitters(EmitTable& t);          // lstm_sequence, gru_sequence

// Emits `onnx_op` with the node's inputs (converted to the output's dtype) and output 0.
void emit_same_type(EmitContext& c, const std::string& onnx_op);

}  // namespace ath::onnx::detail
