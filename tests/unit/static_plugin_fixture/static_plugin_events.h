/* What make generates for a static build (vmm/variants.mk), for test_trace_static: a plugin handling pio only. */
#define KVMPROF_STATIC_ON_pio 1
