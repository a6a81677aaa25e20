// Every nn layer, container and tool in one include.
//
//   #include "athanor/nn/nn.h"
//   nn::Sequential net;
//   net.emplace_back<nn::Conv2d>(nn::Conv2dOptions{.in = 1, .out = 8, .kernel = 3});
//   net.emplace_back<nn::ReLU>();
//   Tensor y = net(randn({1, 1, 28, 28}));   // [1, 8, 26, 26]
#pragma once

#include "athanor/nn/activation.h"
#include "athanor/nn/batch_norm.h"
#include "athanor/nn/bilinear.h"
#include "athanor/nn/conv.h"
#include "athanor/nn/crf.h"
#include "athanor/nn/ctc_decode.h"
#include "athanor/nn/ctc_loss.h"
#include "athanor/nn/dropout.h"
#include "athanor/nn/embedding.h"
#include "athanor/nn/flatten.h"
#include "athanor/nn/generate.h"
#include "athanor/nn/group_norm.h"
#include "athanor/nn/hmm.h"
#include "athanor/nn/identity.h"
#include "athanor/nn/init.h"
#include "athanor/nn/linear.h"
#include "athanor/nn/module.h"
#include "athanor/nn/module_dict.h"
#include "athanor/nn/module_list.h"
#include "athanor/nn/multihead_attention.h"
#include "athanor/nn/normalization.h"
#include "athanor/nn/pooling.h"
#include "athanor/nn/rnn.h"
#include "athanor/nn/sequential.h"
#include "athanor/nn/summary.h"
#include "athanor/nn/transformer.h"
