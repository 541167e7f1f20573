# Runs a command and checks its exit status and output, for the tests that
# must fail in a particular way (a wrong result must exit non-zero, and say
# so). Usage:
#   cmake -DCOMMAND=a|b|c -DEXPECT_EXIT=1 -DEXPECT_OUTPUT=regex -P expect_exit.cmake
string(REPLACE "|" ";" command "${COMMAND}")
execute_process(COMMAND ${command} RESULT_VARIABLE exit_code OUTPUT_VARIABLE out
                ERROR_VARIABLE err TIMEOUT 240)
set(all "${out}\n${err}")
if(NOT "${exit_code}" STREQUAL "${EXPECT_EXIT}")
  message(FATAL_ERROR "expected exit status ${EXPECT_EXIT}, got '${exit_code}' from:\n"
                      "  ${command}\n--- output ---\n${all}")
endif()
if(NOT all MATCHES "${EXPECT_OUTPUT}")
  message(FATAL_ERROR "output does not match '${EXPECT_OUTPUT}':\n${all}")
endif()
message(STATUS "exit ${exit_code} as expected; output matches '${EXPECT_OUTPUT}'")
