#pragma once
// Checks whose answer a GPU kernel computes, run when the host next waits for that device anyway.
//
// A loss kernel finds out whether a target was out of range; reading that flag back at once would
// make the host wait for the GPU inside every training step. PyTorch answers with a device-side
// assert, which kills the CUDA context; ringgrad defers the read instead: the op registers a
// check, and the checks of a device run the next time the host reads from it (a copy to the
// host: a loss or flag read, a checkpoint) or synchronises with it — points where the host waits
// in any case, so the check costs no extra stall. The error is the op's own, named, as an
// asynchronous CUDA error would be: it surfaces at that later point, not at the call. In a
// training step that point is the loss scaler's one read per step, or the progress bar's.
//
// Thread-safe. A check may itself read from the device (it runs with the list already taken, so
// it does not run itself again).

#include <functional>

#include "core/device.h"

namespace rg {

// `check` throws rg::Error when what it reads back says so.
void defer_check(const Device& device, std::function<void()> check);

// Runs and forgets the checks deferred on `device`, in order; every one runs, then the first
// error is rethrown. Core calls it after each copy from the device to the host and in
// synchronize(device).
void run_deferred_checks(const Device& device);

// How many checks wait on `device` (for tests).
std::size_t deferred_check_count(const Device& device);

}  // namespace rg
