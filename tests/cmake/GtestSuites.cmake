# ddptrain_add_gtest_suites(TARGET [PROPERTIES NAME VALUE...]): one ctest test per GoogleTest
# suite of TARGET (every case of the suite in one process), where gtest_discover_tests makes one
# per case. Each process pays LibTorch's start (about a second of loading and registering
# operators on the 2-core machines), which was most of the unit tests' time: 143 cases, 48 suites.
# The suites are listed when ctest runs (as gtest_discover_tests' PRE_TEST mode does), from the
# executable, and listed again only after it was rebuilt; so no suite can be missed, and a tree
# that builds an executable it cannot start (the CUDA leg) still configures. A suite's test runs
# through run_gtest_suite.sh: a skipped case makes the whole suite report a skip (exit 77), so
# check.sh still names it.
set(DDPTRAIN_GTEST_SUITES_DIR ${CMAKE_CURRENT_LIST_DIR})

function(ddptrain_add_gtest_suites target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "PROPERTIES")
  set(properties "SKIP_RETURN_CODE 77")
  set(pairs ${arg_PROPERTIES})
  while(pairs)
    list(POP_FRONT pairs name value)
    string(REPLACE "\"" "\\\"" value "${value}")
    string(APPEND properties " ${name} \"${value}\"")
  endwhile()
  set(list_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake)
  set(include_file ${CMAKE_CURRENT_BINARY_DIR}/${target}_suites_include.cmake)
  file(GENERATE OUTPUT ${include_file} CONTENT
"# Written by tests/cmake/GtestSuites.cmake: ${target}'s suites, listed when ctest runs.
set(executable \"$<TARGET_FILE:${target}>\")
set(list_file \"${list_file}\")
if(NOT EXISTS \"\${executable}\")
  add_test(${target}_NOT_BUILT ${target}_NOT_BUILT)
  set_tests_properties(${target}_NOT_BUILT PROPERTIES ${properties})
  return()
endif()
if(NOT EXISTS \"\${list_file}\" OR \"\${executable}\" IS_NEWER_THAN \"\${list_file}\")
  include(\"${DDPTRAIN_GTEST_SUITES_DIR}/gtest_suites_list.cmake\")
  ddptrain_write_gtest_suites(\"\${executable}\" \"\${list_file}\"
    \"${DDPTRAIN_GTEST_SUITES_DIR}/run_gtest_suite.sh\" [==[${properties}]==])
endif()
include(\"\${list_file}\")
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${include_file})
endfunction()
