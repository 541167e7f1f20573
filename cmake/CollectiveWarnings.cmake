# The project's warning set, on every target the project builds, and
# COLLECTIVE_WERROR to make those warnings errors.
#
# COLLECTIVE_WERROR defaults to OFF for users (a newer compiler's new
# warning must not break their build) and to ON when the environment has
# CI=true at the first configure, so that every CI build (scripts/build.sh,
# the sanitizer, MPICH and fuzz builds) fails on a warning without each
# script having to pass it. An explicit -DCOLLECTIVE_WERROR=ON|OFF wins.
#
# Third-party headers (MPI, hwloc, GoogleTest, Boost, CUDA) come from
# imported targets or /usr/include, which compilers treat as system
# headers: their warnings never fail the build.
if(NOT DEFINED COLLECTIVE_WERROR AND "$ENV{CI}" STREQUAL "true")
  set(_collective_werror_default ON)
else()
  set(_collective_werror_default OFF)
endif()
option(COLLECTIVE_WERROR "Treat compiler warnings as errors (default ON when CI=true)"
       ${_collective_werror_default})

# C and C++: -Wall -Wextra -Wpedantic, and -Wswitch-enum so that a switch
# over an enum names every enumerator even where it has a default: adding a
# data type, op or algorithm then shows every switch that must learn it.
# Fortran (the bind(C) module and its test): -Wall, and errors too, since
# gfortran's -Wall is quiet on standard-conforming code.
set(COLLECTIVE_WARNING_OPTIONS -Wall)
foreach(_warning -Wextra -Wpedantic -Wswitch-enum)
  list(APPEND COLLECTIVE_WARNING_OPTIONS $<$<COMPILE_LANGUAGE:C,CXX>:${_warning}>)
endforeach()
# Except -Wrestrict in C++ under gcc 12 and later: libstdc++'s std::string,
# inlined at -O2/-O3, trips a false overlap report when a one-character
# literal is added to or assigned to a string ("#" + std::to_string(n)),
# a known gcc 12 regression, also in code that GoogleTest's macros expand
# into our test files. C keeps it.
list(APPEND COLLECTIVE_WARNING_OPTIONS
     $<$<AND:$<COMPILE_LANG_AND_ID:CXX,GNU>,$<VERSION_GREATER_EQUAL:$<CXX_COMPILER_VERSION>,12>>:-Wno-restrict>)
# Under ThreadSanitizer gcc says at every std::atomic_thread_fence that TSan
# does not model fences (-Wtsan, on by default): a note on the tool, not on
# the code, whose fences are meant (the flight recorder's seqlock, the
# parameter servers' shared-memory staging).
if("thread" IN_LIST COLLECTIVE_SANITIZE)
  list(APPEND COLLECTIVE_WARNING_OPTIONS $<$<COMPILE_LANG_AND_ID:CXX,GNU>:-Wno-tsan>)
endif()
if(COLLECTIVE_WERROR)
  list(APPEND COLLECTIVE_WARNING_OPTIONS -Werror)
else()
  # Always an error, in every build: a switch over an enum that misses an
  # enumerator. An algorithm's run() names every CollectiveKind, so a new
  # collective cannot reach a switch that silently returns.
  list(APPEND COLLECTIVE_WARNING_OPTIONS $<$<COMPILE_LANGUAGE:C,CXX>:-Werror=switch>)
endif()

# Applies the warning set to every compiled target defined in `dir` and the
# directories below it. Called once, at the end of the top-level
# CMakeLists.txt, so that a target added anywhere later gets it too.
function(collective_apply_warnings dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(target IN LISTS targets)
    get_target_property(type ${target} TYPE)
    if(type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$")
      target_compile_options(${target} PRIVATE ${COLLECTIVE_WARNING_OPTIONS})
    endif()
  endforeach()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(subdir IN LISTS subdirs)
    collective_apply_warnings(${subdir})
  endforeach()
endfunction()
