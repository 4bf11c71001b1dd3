# Included by ctest (tests/cmake/GtestSuites.cmake): writes the ctest file of one GoogleTest
# executable, one test per suite.
function(ddptrain_write_gtest_suites executable list_file runner properties)
  get_filename_component(name "${executable}" NAME)
  execute_process(COMMAND "${executable}" --gtest_list_tests
    OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE rc TIMEOUT 120)
  if(NOT rc EQUAL 0)
    # Not written, so the next ctest lists again; this run reports it as a failing test.
    file(WRITE "${list_file}.failed"
      "add_test(${name}_NOT_LISTED ${name}_NOT_LISTED)\n")
    message(WARNING "${executable} --gtest_list_tests failed (${rc}): ${errors}")
    set(list_file "${list_file}.failed" PARENT_SCOPE)
    return()
  endif()
  string(REPLACE "\n" ";" lines "${listing}")
  set(content "")
  foreach(line IN LISTS lines)
    # A suite's line is its name and a dot at the start of the line (cases are indented),
    # perhaps followed by a comment ("  # TypeParam = ..."); gtest_main's banner has no dot.
    if(line MATCHES "^([A-Za-z_][A-Za-z0-9_/]*)\\.( .*)?$")
      set(suite "${CMAKE_MATCH_1}")
      string(APPEND content "add_test([==[${suite}]==] bash [==[${runner}]==] "
                            "[==[${executable}]==] [==[${suite}]==])\n"
                            "set_tests_properties([==[${suite}]==] PROPERTIES ${properties})\n")
    endif()
  endforeach()
  if(content STREQUAL "")
    set(content "add_test(${name}_HAS_NO_SUITE ${name}_HAS_NO_SUITE)\n")
  endif()
  file(WRITE "${list_file}" "${content}")
endfunction()
