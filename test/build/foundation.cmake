# Build and loading checks (label uct: they need UCX, not devices).
add_test(NAME build_configure_mismatch
         COMMAND ${UCCL_SRCDIR}/test/build/configure_mismatch.sh ${UCCL_SRCDIR})
add_test(NAME build_version_guard
         COMMAND ${UCCL_SRCDIR}/test/build/version_guard.sh ${UCCL_BUILDDIR})
set_tests_properties(build_configure_mismatch build_version_guard PROPERTIES
                     LABELS "uct" TIMEOUT 300)
