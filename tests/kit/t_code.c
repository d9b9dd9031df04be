/* SPDX-License-Identifier: MIT */
#include "t_code.h"
#include "t_state.h"
#include "../../src/core/os.h"

void t_emit_ret(uint8_t *p, uint32_t v)
{
	p[0] = 0xb8;
	memcpy(p + 1, &v, 4);
	p[5] = 0xc3;
}

void t_perms(const void *addr, char out[5])
{
	struct t_map m;

	strcpy(out, t_map_of(addr, &m) ? m.perms : "");
}

int t_vma_pkey(const void *addr)
{
	return mpk_os_vma_pkey(addr);
}

/*
 * Run fn(arg) in a child (t_run_child) with mpkit's fault handler and a
 * callback that records the fault as the recorder would, exiting 42 when
 * the report names the domain t_mpk_domain and says write, 43 otherwise:
 * the test sees what mpkit made of the fault.
 */
static const char *t_mpk_domain;

static int t_mpk_fault_cb(const struct mpk_fault *f, void *arg)
{
	(void)arg;
	struct t_fault r = { 1, f->si_code, f->pkey, f->addr, 0 };
	t_fault_record(&r);
	_exit(f->write && !strcmp(f->domain_name, t_mpk_domain) ? 42 : 43);
}

static void t_mpk_child_main(void *arg)
{
	struct t_mpk_child *c = arg;
	REQUIRE(mpk_fault_handler_install(t_mpk_fault_cb, NULL) == 0);
	c->fn(c->arg);
}

struct t_fault t_mpk_write_fault_in_child(const char *domain, void (*fn)(void *), void *arg)
{
	struct t_mpk_child c = { fn, arg };
	t_mpk_domain = domain;
	return t_run_child(t_mpk_child_main, &c);
}

void t_sync_core(void)
{
	static int registered;
	if (!registered)
		registered = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0) ? -1 : 1;
	if (registered > 0)
		syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0, 0);
}
