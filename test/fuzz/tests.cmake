# Tests with label 'fuzz' (included by test/CTestTestfile.cmake): libFuzzer
# targets run for a bounded time (FUZZ_SECONDS, default 60) under ASan and
# UBSan; built when configure found a clang with libFuzzer.
if(UCCL_FUZZ_CC)
    if(DEFINED ENV{FUZZ_SECONDS})
        set(fuzz_secs $ENV{FUZZ_SECONDS})
    else()
        set(fuzz_secs 60)
    endif()
    math(EXPR fuzz_limit "${fuzz_secs} + 120")
    add_test(NAME fuzz_proto
             COMMAND ${UCCL_SRCDIR}/test/fuzz/run_fuzz.sh
                     ${UCCL_BUILDDIR}/test/fuzz/fuzz_proto ${fuzz_secs})
    set_tests_properties(fuzz_proto PROPERTIES LABELS "fuzz"
                         TIMEOUT ${fuzz_limit})
endif()
