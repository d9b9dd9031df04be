/* SPDX-License-Identifier: MIT */
/* Architectures without protection keys. */
#include <string.h>

#include "../arch.h"

void mpk_arch_caps(struct mpk_arch_caps *caps) { memset(caps, 0, sizeof(*caps)); }
bool mpk_arch_frame_reg_get(void *uc, mpk_reg_t *reg) { (void)uc; (void)reg; return false; }
bool mpk_arch_frame_reg_set(void *uc, mpk_reg_t reg) { (void)uc; (void)reg; return false; }
bool mpk_arch_fault_is_write(const void *uc) { (void)uc; return false; }
void mpk_arch_frame_restart(void *uc) { (void)uc; }
int mpk_arch_frame_chain(void *uc, void **frames, int max, int *own) { (void)max; frames[0] = uc; *own = 0; return 1; }
int mpk_arch_self_frames(int sig, void **frames, int max, int *own) { (void)sig; (void)frames; (void)max; *own = -1; return 0; }
bool mpk_arch_fault_is_fetch(const void *uc) { (void)uc; return false; }
void mpk_arch_frame_step(void *uc, bool on) { (void)uc; (void)on; }
void *mpk_arch_frame_ip(const void *uc) { (void)uc; return NULL; }
size_t mpk_arch_self_read(void *buf, uintptr_t addr, size_t len) { (void)buf; (void)addr; (void)len; return 0; }
void mpk_arch_gate_span(uintptr_t *lo, uintptr_t *hi) { *lo = *hi = 0; }
uintptr_t mpk_arch_thread_pointer(void) { return 0; }

#include <errno.h>
#include <unistd.h>
/* No filter knows this site (lockdown is x86-64 only): plain syscall(). */
long mpk_arch_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	long r = syscall(nr, a, b, c, d, e, f);
	return r == -1 ? -errno : r;
}
const char mpk_arch_syscall_ip[1];
