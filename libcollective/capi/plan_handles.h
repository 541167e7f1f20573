// The C API's handles of persistent plans (collective_plan_t): a registry
// of serial numbers, as for work handles (work_handles.h), so that a freed
// or never-issued handle gives a status, never a dereference.
#pragma once

#include "collective/collective.h"
#include "collective/collective_c.h"

namespace collective::capi {

// Registers `plan` and returns its new handle.
collective_plan_t issue_plan(Plan plan);

}  // namespace collective::capi
