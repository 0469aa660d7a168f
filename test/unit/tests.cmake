# Tests with label 'unit' (included by test/CTestTestfile.cmake): the
# protocol core, no devices. Each program takes a seed; the randomised ones
# run with three.
foreach(t seq wire sack order retx cc cc_swift cc_timely cc_eqds path clock
          put_runs)
    add_test(NAME unit_${t}
             COMMAND ${UCCL_BUILDDIR}/test/unit/test_${t} 1)
    set_tests_properties(unit_${t} PROPERTIES LABELS "unit" TIMEOUT 120)
endforeach()
foreach(t wire sack order retx path cc cc_swift cc_eqds clock put_runs)
    foreach(seed 2 3)
        add_test(NAME unit_${t}_seed${seed}
                 COMMAND ${UCCL_BUILDDIR}/test/unit/test_${t} ${seed})
        set_tests_properties(unit_${t}_seed${seed} PROPERTIES
                             LABELS "unit" TIMEOUT 120)
    endforeach()
endforeach()
