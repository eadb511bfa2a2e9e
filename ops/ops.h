#pragma once
// Every op of ringgrad, for code above the ops layer: #include "ops/ops.h".

#include "ops/add/add.h"
#include "ops/conv2d/conv2d.h"
#include "ops/conv_transpose2d/conv_transpose2d.h"
#include "ops/relu/relu.h"
