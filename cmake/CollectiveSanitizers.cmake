# COLLECTIVE_SANITIZE=address;undefined (or thread) instruments every target
# of the project; used by the sanitizer jobs in scripts/test.sh.
if(COLLECTIVE_SANITIZE)
  set(_collective_san_flags "")
  foreach(_san IN LISTS COLLECTIVE_SANITIZE)
    list(APPEND _collective_san_flags "-fsanitize=${_san}")
  endforeach()
  add_compile_options(${_collective_san_flags} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(${_collective_san_flags})
endif()
