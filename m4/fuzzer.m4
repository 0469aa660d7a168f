# UCCL_CHECK_FUZZER: a clang that builds libFuzzer targets with ASan and
# UBSan (Debian's clang and libclang-rt-14-dev). FUZZ_CC is empty without.
AC_DEFUN([UCCL_CHECK_FUZZER], [
    AC_ARG_VAR([FUZZ_CC], [clang for the libFuzzer targets])
    AS_IF([test -z "$FUZZ_CC"],
          [AC_PATH_PROGS([FUZZ_CC], [clang clang-16 clang-15 clang-14], [])])
    uccl_have_fuzzer=no
    AS_IF([test -n "$FUZZ_CC"],
          [AC_MSG_CHECKING([whether $FUZZ_CC builds libFuzzer targets])
           cat > conftest_fuzz.c <<_EOF
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }
_EOF
           AS_IF([$FUZZ_CC -fsanitize=fuzzer,address,undefined \
                      conftest_fuzz.c -o conftest_fuzz >/dev/null 2>&1],
                 [uccl_have_fuzzer=yes])
           rm -f conftest_fuzz.c conftest_fuzz
           AC_MSG_RESULT([$uccl_have_fuzzer])])
    AS_IF([test "$uccl_have_fuzzer" = no], [FUZZ_CC=""])
    AM_CONDITIONAL([HAVE_FUZZER], [test "$uccl_have_fuzzer" = yes])
])
