#pragma once
// Every op of ringgrad, for code above the ops layer: #include "ops/ops.h".

#include "ops/add/add.h"
#include "ops/binary_cross_entropy_with_logits/binary_cross_entropy_with_logits.h"
#include "ops/cross_entropy/cross_entropy.h"
#include "ops/log_softmax/log_softmax.h"
#include "ops/max/max.h"
#include "ops/mean/mean.h"
#include "ops/mse_loss/mse_loss.h"
#include "ops/nll_loss/nll_loss.h"
#include "ops/reduction/reduction.h"
#include "ops/relu/relu.h"
#include "ops/softmax/softmax.h"
#include "ops/sum/sum.h"
