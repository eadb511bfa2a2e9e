#pragma once
// Everything of the optim layer: #include "optim/optim.h".

#include "optim/adamw.h"
#include "optim/amp.h"
#include "optim/checkpoint.h"
#include "optim/clip_grad.h"
#include "optim/lookahead.h"
#include "optim/loss_scaler.h"
#include "optim/lr_scheduler.h"
#include "optim/optimizer.h"
#include "optim/param_groups.h"
#include "optim/sgd.h"
