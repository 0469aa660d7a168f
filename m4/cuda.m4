# UCCL_CHECK_CUDA: optional; --with-cuda[=DIR] (default: look in /usr/local/cuda).
AC_DEFUN([UCCL_CHECK_CUDA], [
    AC_ARG_WITH([cuda],
        [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
            [CUDA toolkit for GPU memory registration (default: auto, /usr/local/cuda)])],
        [], [with_cuda=guess])
    uccl_have_cuda=no
    AS_IF([test "x$with_cuda" != xno], [
        AS_IF([test "x$with_cuda" = xyes -o "x$with_cuda" = xguess],
              [cuda_dir=/usr/local/cuda], [cuda_dir=$with_cuda])
        save_CPPFLAGS=$CPPFLAGS
        CPPFLAGS="$CPPFLAGS -I$cuda_dir/include"
        AC_CHECK_HEADER([cuda.h], [uccl_have_cuda=yes])
        CPPFLAGS=$save_CPPFLAGS
        AS_IF([test "x$uccl_have_cuda" = xno -a "x$with_cuda" != xguess],
              [AC_MSG_ERROR([--with-cuda given but $cuda_dir/include/cuda.h not found])])
    ])
    AS_IF([test "x$uccl_have_cuda" = xyes], [
        CUDA_CFLAGS="-I$cuda_dir/include"
        AC_DEFINE([HAVE_CUDA], [1], [CUDA toolkit headers available])
    ])
    AC_SUBST([CUDA_CFLAGS])
    AM_CONDITIONAL([HAVE_CUDA], [test "x$uccl_have_cuda" = xyes])
])

# UCCL_CHECK_MPI: optional; mpicc builds the MPI examples and tests.
AC_DEFUN([UCCL_CHECK_MPI], [
    AC_PATH_PROG([MPICC], [mpicc])
    AM_CONDITIONAL([HAVE_MPI], [test -n "$MPICC"])
])
