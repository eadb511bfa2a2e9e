#pragma once
// Every op of ringgrad, for code above the ops layer: #include "ops/ops.h".

#include "ops/adaptive_avg_pool2d/adaptive_avg_pool2d.h"
#include "ops/add/add.h"
#include "ops/avg_pool2d/avg_pool2d.h"
#include "ops/cat/cat.h"
#include "ops/max_pool2d/max_pool2d.h"
#include "ops/relu/relu.h"
#include "ops/split/split.h"
#include "ops/upsample/upsample.h"
