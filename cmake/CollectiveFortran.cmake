# Fortran, for the `collective` module (libcollective/fortran), only where
# a Fortran compiler is found: the build works without one. Enabled here,
# at the top level, because the module's tests live in another directory.
include(CheckLanguage)
check_language(Fortran)
if(CMAKE_Fortran_COMPILER)
  enable_language(Fortran)
  set(COLLECTIVE_HAVE_FORTRAN ON)
  message(STATUS "libcollective: Fortran module enabled (${CMAKE_Fortran_COMPILER})")
else()
  set(COLLECTIVE_HAVE_FORTRAN OFF)
  message(STATUS "libcollective: no Fortran compiler found; the Fortran module and its tests are not built")
endif()
