#pragma once
// Every op of ringgrad, for code above the ops layer: #include "ops/ops.h".

#include "ops/add/add.h"
#include "ops/batch_norm/batch_norm.h"
#include "ops/dropout/dropout.h"
#include "ops/linear/linear.h"
#include "ops/matmul/matmul.h"
#include "ops/relu/relu.h"
