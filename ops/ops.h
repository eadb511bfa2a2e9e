#pragma once
// Every op of ringgrad, for code above the ops layer: #include "ops/ops.h".

#include "ops/add/add.h"
#include "ops/cast/cast.h"
#include "ops/copy/copy.h"
#include "ops/div/div.h"
#include "ops/exp/exp.h"
#include "ops/leaky_relu/leaky_relu.h"
#include "ops/log/log.h"
#include "ops/mul/mul.h"
#include "ops/neg/neg.h"
#include "ops/pow/pow.h"
#include "ops/relu/relu.h"
#include "ops/sigmoid/sigmoid.h"
#include "ops/sqrt/sqrt.h"
#include "ops/sub/sub.h"
#include "ops/tanh/tanh.h"
