# UCCL_CHECK_PYTHON: the Python 3 the `ucp` binding (src/python) is built
# for. Default /usr/bin/python3, the interpreter Debian's Dask is installed
# for, even when another python3 comes first in PATH; --with-python=PATH
# picks another, --without-python skips the binding.
AC_DEFUN([UCCL_CHECK_PYTHON], [
    AC_ARG_WITH([python],
        [AS_HELP_STRING([--with-python=PATH],
            [Python 3 interpreter to build the ucp binding for
             (default: /usr/bin/python3 if present)])],
        [], [with_python=check])
    uccl_have_python=no
    PYTHON_BIN=""
    AS_CASE(["$with_python"],
        [no], [],
        [check|yes], [AS_IF([test -x /usr/bin/python3],
                            [PYTHON_BIN=/usr/bin/python3],
                            [AC_PATH_PROG([PYTHON_BIN], [python3])])],
        [PYTHON_BIN=$with_python])

    AS_IF([test -n "$PYTHON_BIN"], [
        AC_MSG_CHECKING([for the headers of $PYTHON_BIN])
        PYTHON_INCLUDE=$($PYTHON_BIN -c 'import sysconfig; print(sysconfig.get_paths()[["include"]])' 2>/dev/null)
        PYTHON_EXT_SUFFIX=$($PYTHON_BIN -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))' 2>/dev/null)
        AS_IF([test -n "$PYTHON_INCLUDE" -a -f "$PYTHON_INCLUDE/Python.h" -a -n "$PYTHON_EXT_SUFFIX"],
              [uccl_have_python=yes
               AC_MSG_RESULT([$PYTHON_INCLUDE, modules *$PYTHON_EXT_SUFFIX])],
              [AC_MSG_RESULT([no])])
    ])
    AS_IF([test "$uccl_have_python" = no -a "$with_python" != check -a "$with_python" != no],
          [AC_MSG_ERROR([no Python headers for ${PYTHON_BIN:-python3}: install python3-dev (contrib/setup.sh does)])])
    AS_IF([test "$uccl_have_python" = no -a "$with_python" = check],
          [AC_MSG_WARN([python3-dev not found: the ucp binding (Dask over UCX) is not built])])
    PYTHON_CFLAGS="-I$PYTHON_INCLUDE"
    AC_SUBST([PYTHON_BIN])
    AC_SUBST([PYTHON_CFLAGS])
    AC_SUBST([PYTHON_EXT_SUFFIX])
    AC_SUBST([HAVE_PYTHON_EXT], [$uccl_have_python])
    AM_CONDITIONAL([HAVE_PYTHON_EXT], [test "$uccl_have_python" = yes])
])
