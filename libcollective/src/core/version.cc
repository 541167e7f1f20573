#include "collective/version.h"

namespace collective {

const char* version_string() { return COLLECTIVE_VERSION_STRING; }
const char* git_revision() { return COLLECTIVE_GIT_REVISION; }
bool built_with_nccl() {
#ifdef COLLECTIVE_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

}  // namespace collective
