# UCCL_CHECK_UCX_GLUE: which shape each internal UCX interface that
# src/ucs_glue adapts has in the UCX being built against. Every probe
# compiles, against that release's own internal headers, the same code the
# glue then uses (function types must match exactly: incompatible pointer
# types are errors here), so the glue never guesses from a version number.
# An interface that matches none of the known shapes stops configure.
#
# Called from UCCL_CHECK_UCX with CPPFLAGS set for the internal headers.

# UCCL_GLUE_PROBE(NAME, PROLOGUE, BODY, DESCRIPTION)
# Defines UCCL_GLUE_NAME and sets uccl_glue_NAME=yes|no.
AC_DEFUN([UCCL_GLUE_PROBE], [
    AC_MSG_CHECKING([UCX internal interface: $4])
    save_CFLAGS=$CFLAGS
    CFLAGS="$CFLAGS -Werror=incompatible-pointer-types -Werror=implicit-function-declaration"
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[
#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <uct/base/uct_component.h>
$2
]], [[$3]])],
        [uccl_glue_$1=yes
         AC_DEFINE([UCCL_GLUE_$1], [1], [UCX: $4])],
        [uccl_glue_$1=no])
    CFLAGS=$save_CFLAGS
    AC_MSG_RESULT([$uccl_glue_$1])
])

# UCCL_GLUE_REQUIRE(WHAT, NAME...): one of the named probes must have matched.
AC_DEFUN([UCCL_GLUE_REQUIRE], [
    uccl_glue_found=no
    for p in $2; do
        eval "v=\$uccl_glue_$p"
        AS_IF([test "x$v" = xyes], [uccl_glue_found=yes])
    done
    AS_IF([test "x$uccl_glue_found" = xno],
          [AC_MSG_ERROR([UCX $UCX_VERSION: $1 has a shape src/ucs_glue does not know yet (see config.log); add an adapter to src/ucs_glue and a probe to m4/ucx_glue.m4])])
])

AC_DEFUN([UCCL_CHECK_UCX_GLUE], [
    dnl uct_md_ops_t.query: uct_md_attr_t (1.13) or uct_md_attr_v2_t (1.14+)
    UCCL_GLUE_PROBE([MD_QUERY_V1],
        [static ucs_status_t q(uct_md_h md, uct_md_attr_t *a)
          { a->cap.flags = 0; a->cap.max_reg = 0; a->cap.max_alloc = 0;
            a->cap.reg_mem_types = 0; a->cap.access_mem_types = 0;
            a->cap.detect_mem_types = 0; a->cap.alloc_mem_types = 0;
            a->rkey_packed_size = 0; a->reg_cost = ucs_linear_func_make(0, 0);
            memset(&a->local_cpus, 0, sizeof(a->local_cpus)); return UCS_OK; }],
        [uct_md_ops_t o = {.query = q}; (void)o;],
        [md query takes uct_md_attr_t])
    UCCL_GLUE_PROBE([MD_QUERY_V2],
        [static ucs_status_t q(uct_md_h md, uct_md_attr_v2_t *a)
          { a->flags = 0; a->max_reg = 0; a->max_alloc = 0;
            a->reg_mem_types = 0; a->access_mem_types = 0;
            a->detect_mem_types = 0; a->alloc_mem_types = 0;
            a->rkey_packed_size = 0; a->reg_cost = ucs_linear_func_make(0, 0);
            memset(&a->local_cpus, 0, sizeof(a->local_cpus)); return UCS_OK; }],
        [uct_md_ops_t o = {.query = q}; (void)o;],
        [md query takes uct_md_attr_v2_t])
    UCCL_GLUE_REQUIRE([uct_md_ops_t.query], [MD_QUERY_V1 MD_QUERY_V2])
    UCCL_GLUE_PROBE([MD_BASE_MD_QUERY], [],
        [uct_md_attr_v2_t a; uct_md_base_md_query(&a);],
        [uct_md_base_md_query() fills md attribute defaults])

    dnl uct_md_ops_t.mem_reg: flags (1.13) or a params struct (1.14+)
    UCCL_GLUE_PROBE([MEM_REG_FLAGS],
        [static ucs_status_t r(uct_md_h md, void *a, size_t l, unsigned f,
                                uct_mem_h *m) { return UCS_OK; }],
        [uct_md_ops_t o = {.mem_reg = r}; (void)o;],
        [md mem_reg takes flags])
    UCCL_GLUE_PROBE([MEM_REG_PARAMS],
        [static ucs_status_t r(uct_md_h md, void *a, size_t l,
                                const uct_md_mem_reg_params_t *p, uct_mem_h *m)
          { return UCT_MD_MEM_REG_FIELD_VALUE(p, flags, FIELD_FLAGS, 0) ?
                   UCS_OK : UCS_OK; }],
        [uct_md_ops_t o = {.mem_reg = r}; (void)o;],
        [md mem_reg takes uct_md_mem_reg_params_t])
    UCCL_GLUE_REQUIRE([uct_md_ops_t.mem_reg], [MEM_REG_FLAGS MEM_REG_PARAMS])

    dnl uct_md_ops_t.mem_dereg: a params struct in every supported release
    UCCL_GLUE_PROBE([MEM_DEREG_PARAMS],
        [static ucs_status_t d(uct_md_h md, const uct_md_mem_dereg_params_t *params)
          { UCT_MD_MEM_DEREG_CHECK_PARAMS(params, 0); return UCS_OK; }],
        [uct_md_ops_t o = {.mem_dereg = d}; (void)o;],
        [md mem_dereg takes uct_md_mem_dereg_params_t])
    UCCL_GLUE_REQUIRE([uct_md_ops_t.mem_dereg], [MEM_DEREG_PARAMS])

    dnl uct_md_ops_t.mkey_pack: address and length added in 1.16
    UCCL_GLUE_PROBE([MKEY_PACK_PARAMS],
        [static ucs_status_t k(uct_md_h md, uct_mem_h m,
                                const uct_md_mkey_pack_params_t *p, void *b)
          { return UCS_OK; }],
        [uct_md_ops_t o = {.mkey_pack = k}; (void)o;],
        [md mkey_pack takes params])
    UCCL_GLUE_PROBE([MKEY_PACK_ADDR],
        [static ucs_status_t k(uct_md_h md, uct_mem_h m, void *a, size_t l,
                                const uct_md_mkey_pack_params_t *p, void *b)
          { return UCS_OK; }],
        [uct_md_ops_t o = {.mkey_pack = k}; (void)o;],
        [md mkey_pack takes address, length and params])
    UCCL_GLUE_REQUIRE([uct_md_ops_t.mkey_pack], [MKEY_PACK_PARAMS MKEY_PACK_ADDR])

    dnl optional md operations the glue fills when the release has them
    UCCL_GLUE_PROBE([MD_SOCKADDR_ACCESSIBLE], [],
        [uct_md_ops_t o = {.is_sockaddr_accessible =
                            ucs_empty_function_return_zero_int}; (void)o;],
        [md ops have is_sockaddr_accessible])
    UCCL_GLUE_PROBE([MD_DETECT_MEMORY_TYPE], [],
        [uct_md_ops_t o = {.detect_memory_type =
                            ucs_empty_function_return_unsupported}; (void)o;],
        [md ops have detect_memory_type])

    dnl uct_component_t.rkey_unpack: unpack params added in 1.19
    UCCL_GLUE_PROBE([RKEY_UNPACK_V1],
        [static ucs_status_t u(uct_component_t *c, const void *b,
                                uct_rkey_t *r, void **h) { return UCS_OK; }],
        [uct_component_t c = {.rkey_unpack = u}; (void)c;],
        [component rkey_unpack without params])
    UCCL_GLUE_PROBE([RKEY_UNPACK_PARAMS],
        [static ucs_status_t u(uct_component_t *c, const void *b,
                                const uct_rkey_unpack_params_t *p,
                                uct_rkey_t *r, void **h) { return UCS_OK; }],
        [uct_component_t c = {.rkey_unpack = u}; (void)c;],
        [component rkey_unpack with uct_rkey_unpack_params_t])
    UCCL_GLUE_REQUIRE([uct_component_t.rkey_unpack], [RKEY_UNPACK_V1 RKEY_UNPACK_PARAMS])
    UCCL_GLUE_PROBE([RKEY_COMPARE], [],
        [uct_component_t c = {.rkey_compare = uct_base_rkey_compare}; (void)c;],
        [component rkey_compare (uct_base_rkey_compare)])
    UCCL_GLUE_PROBE([COMPONENT_FIELDS], [],
        [uct_component_t c = {
              .cm_open      = ucs_empty_function_return_unsupported,
              .rkey_ptr     = ucs_empty_function_return_unsupported,
              .rkey_release = ucs_empty_function_return_success,
              .cm_config    = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
              .md_vfs_init  = (uct_component_md_vfs_init_func_t)
                              ucs_empty_function}; (void)c;],
        [component fields cm_open, rkey_ptr, rkey_release, cm_config, md_vfs_init])
    UCCL_GLUE_REQUIRE([uct_component_t], [COMPONENT_FIELDS])

    dnl the base iface's internal operations, which UCX keeps complete for
    dnl the transports that connect to an iface
    UCCL_GLUE_PROBE([BASE_IFACE_INTERNAL_OPS], [],
        [uct_iface_internal_ops_t *o = &uct_base_iface_internal_ops; (void)o;],
        [uct_base_iface_internal_ops])
    UCCL_GLUE_REQUIRE([uct_iface_internal_ops_t], [BASE_IFACE_INTERNAL_OPS])

    dnl the transport registration macro
    UCCL_GLUE_PROBE([TL_DEFINE_ENTRY],
        [typedef struct { uct_base_iface_t super; } t_iface_t;
          typedef struct { uct_iface_config_t super; } t_config_t;
          static ucs_config_field_t t_table[] = {{NULL}};
          static uct_component_t t_component;
          static ucs_status_t t_devices(uct_md_h md,
                                        uct_tl_device_resource_t **d,
                                        unsigned *n) { return UCS_OK; }
          UCS_CLASS_DECLARE_NEW_FUNC(t_iface_t, uct_iface_t, uct_md_h,
                                     uct_worker_h, const uct_iface_params_t*,
                                     const uct_iface_config_t*);
          UCT_TL_DEFINE_ENTRY(&t_component, t, t_devices, t_iface_t, "T_",
                              t_table, t_config_t)],
        [return *uct_t_tl.name == 't' ? 0 : 1;],
        [UCT_TL_DEFINE_ENTRY with a component pointer])
    UCCL_GLUE_REQUIRE([UCT_TL_DEFINE_ENTRY], [TL_DEFINE_ENTRY])
])
