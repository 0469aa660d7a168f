# Builds UCX's googletest binary with only what the UCT tests need: the
# bundled googletest, the common harness and the generic UCT tests, linked
# against the installed UCX libraries (the ones uccl is built for), not a
# UCX built from source. Called by run-ucx-gtest.sh:
#
#   make -f gtest.mk UCX_SRC=DIR GTEST_DIR=DIR [-j N]
#
# UCX_SRC   the source of exactly the installed UCX (for its internal headers)
# GTEST_DIR a copy of UCX_SRC/test/gtest with uccl added to the test lists
# The current directory receives the objects, config.h and `gtest`.

UCX_SRC   ?= $(error UCX_SRC is not set)
GTEST_DIR ?= $(error GTEST_DIR is not set)

GOOGLETEST := gtest gtest-death-test gtest-filepath gtest-port gtest-printers \
              gtest-test-part gtest-typed-test
COMMON     := main test_gtest_cmn mem_buffer test_helpers test_watchdog test
# every generic UCT test but the performance ones (they need UCX's libperf)
UCT        := test_amo test_amo_add_xor test_amo_and_or test_amo_cswap \
              test_amo_fadd_fxor test_amo_fand_for test_amo_swap test_event \
              test_fence test_flush test_many2one_am test_md test_mem \
              test_p2p_am test_p2p_err test_p2p_mix test_p2p_rma \
              test_pending test_progress test_uct_ep v2/test_uct_query \
              test_zcopy_comp uct_p2p_test uct_test test_stats \
              test_peer_failure

SRCS := $(GOOGLETEST:%=common/googletest/%.cc) $(COMMON:%=common/%.cc) \
        $(UCT:%=uct/%.cc)
OBJS := $(SRCS:.cc=.o)

# UCX's own flags for its gtest (config/m4/compiler.m4, test/gtest/Makefile.am)
CPPFLAGS := -DHAVE_CONFIG_H -DCPU_FLAGS="" -I. -I$(UCX_SRC)/src \
            -I$(GTEST_DIR)/.. -I$(GTEST_DIR) \
            -DTOP_SRCDIR=\"$(UCX_SRC)\" \
            -DGTEST_UCM_HOOK_LIB_DIR=\"$(CURDIR)/ucm-hooks\" -MMD -MP
CXXFLAGS := -O3 -g -Wall -Werror -funwind-tables \
            -Wno-missing-field-initializers -Wno-unused-parameter \
            -Wno-unused-label -Wno-long-long -Wno-endif-labels \
            -Wno-sign-compare -Wno-multichar -Wno-deprecated-declarations \
            -Winvalid-pch -fno-tree-vectorize -std=c++11 -fopenmp
LIBS     := -Wl,-dynamic-list-data -lucp -luct -lucs -lucm -lrt -ldl -lpthread

vpath %.cc $(GTEST_DIR)

gtest: $(OBJS)
	$(CXX) $(CXXFLAGS) -o $@ $(OBJS) $(LIBS)

# the installed UCX's configuration, exactly (struct layouts depend on it)
config.h:
	ucx_info -b > $@.tmp && mv $@.tmp $@

%.o: %.cc config.h
	@mkdir -p $(dir $@)
	$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c -o $@ $<

-include $(OBJS:.o=.d)
