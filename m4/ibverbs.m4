# UCCL_CHECK_IBVERBS: libibverbs is required (rdma-core's headers define every
# verbs type the project uses).
AC_DEFUN([UCCL_CHECK_IBVERBS], [
    AC_CHECK_HEADER([infiniband/verbs.h], [],
        [AC_MSG_ERROR([infiniband/verbs.h not found: install libibverbs-dev (contrib/setup.sh does)])])
    AC_CHECK_LIB([ibverbs], [ibv_open_device], [IBVERBS_LIBS=-libverbs],
        [AC_MSG_ERROR([libibverbs not found: install libibverbs-dev (contrib/setup.sh does)])])
    AC_SUBST([IBVERBS_LIBS])
    IBVERBS_LIBDIR=$($PKG_CONFIG --variable=libdir libibverbs 2>/dev/null)
    AS_IF([test -z "$IBVERBS_LIBDIR"],
          [IBVERBS_LIBDIR=/usr/lib/$(gcc -print-multiarch 2>/dev/null)])
    AC_SUBST([IBVERBS_LIBDIR])
])
