# Build and loading checks (label uct: they need UCX, not devices).
add_test(NAME build_configure_mismatch
         COMMAND ${UCCL_SRCDIR}/test/build/configure_mismatch.sh ${UCCL_SRCDIR})
add_test(NAME build_version_guard
         COMMAND ${UCCL_SRCDIR}/test/build/version_guard.sh ${UCCL_BUILDDIR})
add_test(NAME build_other_release
         COMMAND ${UCCL_SRCDIR}/test/build/other_release.sh ${UCCL_BUILDDIR})
set_tests_properties(build_configure_mismatch build_version_guard
                     build_other_release PROPERTIES
                     LABELS "uct" TIMEOUT 300 SKIP_RETURN_CODE 77)
