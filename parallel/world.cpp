#include "parallel/world.h"

#include <mutex>

#include "core/error.h"

namespace rg::parallel {

namespace {
std::mutex world_mutex;
std::shared_ptr<ProcessGroup> process_world;
thread_local std::shared_ptr<ProcessGroup> thread_world;
}  // namespace

void set_world(std::shared_ptr<ProcessGroup> group) {
  std::lock_guard lock(world_mutex);
  process_world = std::move(group);
}

ScopedThreadWorld::ScopedThreadWorld(std::shared_ptr<ProcessGroup> group)
    : previous_(std::move(thread_world)) {
  RG_CHECK(group != nullptr, "ScopedThreadWorld: the group is null");
  thread_world = std::move(group);
}

ScopedThreadWorld::~ScopedThreadWorld() {
  thread_world = std::move(previous_);
}

bool has_world() {
  if (thread_world) return true;
  std::lock_guard lock(world_mutex);
  return process_world != nullptr;
}

std::shared_ptr<ProcessGroup> world_ptr() {
  if (thread_world) return thread_world;
  std::lock_guard lock(world_mutex);
  RG_CHECK(process_world != nullptr,
           "rg::parallel: no world process group — call rg::parallel::init() first (it sets up "
           "MPI, or a world of size 1 without mpirun), or install one with set_world()");
  return process_world;
}

ProcessGroup& world() {
  return *world_ptr();
}
int rank() {
  return world().rank();
}
int size() {
  return world().size();
}
int local_rank() {
  return world().local_rank();
}
int local_size() {
  return world().local_size();
}

}  // namespace rg::parallel
