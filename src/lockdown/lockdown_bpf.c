/* SPDX-License-Identifier: MIT */
/*
 * The lockdown's seccomp filter, written as classic BPF.  Not libseccomp:
 * the core is libc-only, and the rule that matters most, "only mpkit's own
 * system-call site may touch domain memory", compares the instruction
 * pointer, which libseccomp's rule language cannot express.
 *
 * The program (x86-64; any other AUDIT_ARCH, the i386 entry through
 * int 0x80 included, and any x32 number is denied):
 *   denied from anyone: process_vm_writev, ptrace, io_uring_setup/
 *     enter/register, process_madvise, remap_file_pages, userfaultfd,
 *     perf_event_open (a hardware breakpoint on a WRPKRU's check would
 *     stop the thread there with a signal of any number);
 *     madvise MADV_DODUMP and MADV_KEEPONFORK; PROT_EXEC in mmap, mprotect
 *     and pkey_mprotect (no new code after lockdown), but from mpkit's
 *     site on a range inside domain memory (mpk_code_alloc() regions,
 *     which flip between r-x and rw- without a key; mmap with MAP_FIXED);
 *     shmat with SHM_EXEC; personality adding READ_IMPLIES_EXEC (readable
 *     memory would be executable without PROT_EXEC; 0xffffffff, a query,
 *     is allowed);
 *   with MPK_LOCK_NO_OPEN, open/creat/openat/openat2/open_by_handle_at;
 *   with MPK_LOCK_FREEZE_KEYS, pkey_alloc and pkey_free, from mpkit too;
 *   rt_sigaction with a new action for SIGILL, SIGTRAP, SIGBUS, SIGFPE or
 *     SIGSEGV, but from mpkit's site (a handler of a trap or a fault could
 *     move a thread past a WRPKRU's check);
 *   from mpkit's site (mpk_arch_syscall_ip, and another mpkit's in the
 *     process: lockdown.c's peer_sites()): the rest is allowed;
 *   from anywhere else: process_vm_readv (mpkit reads its own stacks
 *     with it, to find nested signal frames), pkey_alloc, pkey_free,
 *     pkey_mprotect and mremap
 *     with MREMAP_FIXED, shmat with SHM_REMAP denied; mprotect, munmap,
 *     madvise, mremap and mmap with MAP_FIXED(_NOREPLACE) denied when
 *     [arg0, arg0 + arg1) touches a domain memory range or mpkit's gate
 *     code (the checked WRPKRU sites: unmapped or not executable, a fetch
 *     fault would stop a thread between a WRPKRU and its check); mremap
 *     at an address in executable memory of lockdown time (grown, a file
 *     mapping takes in the file's next pages; moved, it leaves the known
 *     ranges); madvise on code copied out of a writable file
 *     (MADV_DONTNEED would drop the copy).  See lockdown_exec.c.
 * Denied is SECCOMP_RET_KILL_PROCESS, or SECCOMP_RET_ERRNO | EPERM.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "lockdown.h"
#include "mpkit.h"
#include "../core/os.h"

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MADV_KEEPONFORK
#define MADV_KEEPONFORK 19
#endif
#define SHM_REMAP_FLAG 040000
#define SHM_EXEC_FLAG 0100000
#define READ_IMPLIES_EXEC_FLAG 0x0400000
#define MREMAP_FIXED_FLAG 2
#define X32_BIT 0x40000000u

#define OFF_NR offsetof(struct seccomp_data, nr)
#define OFF_ARCH offsetof(struct seccomp_data, arch)
#define OFF_IP offsetof(struct seccomp_data, instruction_pointer)
#define OFF_ARG(i) (offsetof(struct seccomp_data, args) + 8 * (i))

/* Scratch words: the range [start, end) being checked. */
enum { M_S_LO, M_S_HI, M_E_LO, M_E_HI };

#define MAX_LABELS (60 + 10 * MPK_LOCK_MAX_RANGES + 3 * MPK_LOCK_MAX_EXEC + 5 * MPK_LOCK_MAX_COPIED + \
		    9 * MPK_LOCK_MAX_SITES)
#define NEXT (-1)

/* A tiny assembler: jump targets are labels, resolved at the end. */
struct prog {
	struct sock_filter f[MPK_BPF_MAX];
	int jt[MPK_BPF_MAX], jf[MPK_BPF_MAX]; /* label, or NEXT */
	size_t n;
	size_t at[MAX_LABELS];
	int nlabels;
	bool bad;
	uint32_t deny; /* what a denied call gets (MPK_LOCK_ERRNO or not) */
};

static void emit(struct prog *p, uint16_t code, uint32_t k, int jt, int jf)
{
	if (p->n == MPK_BPF_MAX) {
		p->bad = true;
		return;
	}
	p->f[p->n] = (struct sock_filter){ code, 0, 0, k };
	p->jt[p->n] = jt;
	p->jf[p->n] = jf;
	p->n++;
}

static int label(struct prog *p)
{
	if (p->nlabels == MAX_LABELS) {
		p->bad = true;
		return 0;
	}
	p->at[p->nlabels] = (size_t)-1;
	return p->nlabels++;
}

static void place(struct prog *p, int l)
{
	p->at[l] = p->n;
}

static void ld(struct prog *p, uint32_t off)
{
	emit(p, BPF_LD | BPF_W | BPF_ABS, off, NEXT, NEXT);
}

static void ret(struct prog *p, uint32_t v)
{
	emit(p, BPF_RET | BPF_K, v, NEXT, NEXT);
}

static void jump(struct prog *p, uint16_t op, uint32_t k, int t, int f)
{
	emit(p, BPF_JMP | op | BPF_K, k, t, f);
}

/* Unconditional, 32-bit offset: the way to a far block. */
static void ja(struct prog *p, int l)
{
	emit(p, BPF_JMP | BPF_JA, 0, l, NEXT);
}

static int resolve(struct prog *p)
{
	for (size_t i = 0; i < p->n; i++) {
		struct sock_filter *s = &p->f[i];
		if (BPF_CLASS(s->code) != BPF_JMP)
			continue;
		if (BPF_OP(s->code) == BPF_JA) {
			s->k = (uint32_t)(p->at[p->jt[i]] - i - 1);
			continue;
		}
		size_t t = p->jt[i] == NEXT ? i + 1 : p->at[p->jt[i]];
		size_t f = p->jf[i] == NEXT ? i + 1 : p->at[p->jf[i]];
		if (t <= i || f <= i || t - i - 1 > 255 || f - i - 1 > 255)
			return -1;
		s->jt = (uint8_t)(t - i - 1);
		s->jf = (uint8_t)(f - i - 1);
	}
	return 0;
}

static void st(struct prog *p, uint32_t m)
{
	emit(p, BPF_ST, m, NEXT, NEXT);
}

/* scratch = [arg0, arg0 + arg1), 64-bit, with the carry. */
static void load_range(struct prog *p)
{
	int carry = label(p), nocarry = label(p), hi = label(p);

	ld(p, OFF_ARG(0));
	st(p, M_S_LO);
	ld(p, OFF_ARG(0) + 4);
	st(p, M_S_HI);
	ld(p, OFF_ARG(1));
	emit(p, BPF_MISC | BPF_TAX, 0, NEXT, NEXT);
	ld(p, OFF_ARG(0));
	emit(p, BPF_ALU | BPF_ADD | BPF_X, 0, NEXT, NEXT);
	st(p, M_E_LO);
	emit(p, BPF_JMP | BPF_JGE | BPF_X, 0, nocarry, carry); /* sum >= arg1: no carry */
	place(p, carry);
	ld(p, OFF_ARG(1) + 4);
	emit(p, BPF_ALU | BPF_ADD | BPF_K, 1, NEXT, NEXT);
	ja(p, hi);
	place(p, nocarry);
	ld(p, OFF_ARG(1) + 4);
	place(p, hi);
	emit(p, BPF_MISC | BPF_TAX, 0, NEXT, NEXT);
	ld(p, OFF_ARG(0) + 4);
	emit(p, BPF_ALU | BPF_ADD | BPF_X, 0, NEXT, NEXT);
	st(p, M_E_HI);
}

/* if (scratch word pair m_hi:m_lo  op  k) goto t else goto f, 64-bit:
 * the high words decide unless equal; op (JGT or JGE) is for the low. */
static void cmp64(struct prog *p, uint32_t m_hi, uint32_t m_lo, uint64_t k, uint16_t op, int t, int f)
{
	int low = label(p);

	emit(p, BPF_LD | BPF_MEM, m_hi, NEXT, NEXT);
	jump(p, BPF_JGT, (uint32_t)(k >> 32), t, NEXT);
	jump(p, BPF_JEQ, (uint32_t)(k >> 32), low, f);
	place(p, low);
	emit(p, BPF_LD | BPF_MEM, m_lo, NEXT, NEXT);
	jump(p, op, (uint32_t)k, t, f);
}

/* Return v if (start >= a) == want_a and (end > b) == want_b, where
 * scratch is [start, end); else fall through. */
static void ret_if(struct prog *p, uint64_t a, bool want_a, uint64_t b, bool want_b, uint32_t v)
{
	int next = label(p), second = label(p), yes = label(p);

	cmp64(p, M_S_HI, M_S_LO, a, BPF_JGE, want_a ? second : next, want_a ? next : second);
	place(p, second);
	cmp64(p, M_E_HI, M_E_LO, b, BPF_JGT, want_b ? yes : next, want_b ? next : yes);
	place(p, yes);
	ret(p, v);
	place(p, next);
}

/* Deny if scratch touches [lo, hi): start < hi && end > lo. */
static void check_range(struct prog *p, uint64_t lo, uint64_t hi, uint32_t deny)
{
	ret_if(p, hi, false, lo, true, deny);
}

/* Allow if scratch lies inside [lo, hi): start >= lo && end <= hi. */
static void check_inside(struct prog *p, uint64_t lo, uint64_t hi)
{
	ret_if(p, lo, true, hi, false, SECCOMP_RET_ALLOW);
}

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* At label here: if (arg & mask) goto t else goto f. */
static void arg_flags(struct prog *p, int here, int arg, uint32_t mask, int t, int f)
{
	place(p, here);
	ld(p, OFF_ARG(arg));
	jump(p, BPF_JSET, mask, t, f);
}

/* A is the system-call number: go to target if it is one of nrs. */
static void jump_each(struct prog *p, const uint32_t *nrs, size_t n, int target)
{
	for (size_t i = 0; i < n; i++)
		jump(p, BPF_JEQ, nrs[i], target, NEXT);
}

/* At label here: the call was made from trusted_ip (mpkit's site): goto t
 * else goto f. */
static void from_ip(struct prog *p, int here, uintptr_t trusted_ip, int t, int f)
{
	int low = label(p);

	place(p, here);
	ld(p, OFF_IP + 4);
	jump(p, BPF_JEQ, (uint32_t)((uint64_t)trusted_ip >> 32), low, f);
	place(p, low);
	ld(p, OFF_IP);
	jump(p, BPF_JEQ, (uint32_t)trusted_ip, t, f);
}

/* The trusted sites: mpkit's, and another mpkit's in the process (a
 * program linked with libmpkit.a under the drop-in's libmpkit.so). */
struct sites {
	const uintptr_t *ip;
	size_t n;
};

/* At label here: the call was made from one of the sites: goto t else
 * goto f.  Four instructions a site. */
static void from_sites(struct prog *p, int here, const struct sites *s, int t, int f)
{
	place(p, here);
	for (size_t i = 0; i < s->n; i++) {
		int next = i + 1 < s->n ? label(p) : f, again = label(p);
		from_ip(p, again, s->ip[i], t, next);
		if (i + 1 < s->n)
			place(p, next);
	}
}

/* The program into out: 0, or -1/E2BIG (too long, or a jump too far). */
static int finish(struct prog *p, struct sock_filter *out, size_t *len)
{
	int rc = -1;

	if (!p->bad && !resolve(p) && p->n <= *len) {
		memcpy(out, p->f, p->n * sizeof(*out));
		*len = p->n;
		rc = 0;
	} else {
		errno = E2BIG;
	}
	mpk__ifree(p);
	return rc;
}

/* Where the head sends a call: the blocks after it. */
struct blocks {
	int deny, allow; /* return deny, allow: just after the head */
	int mremap, advise, range, sig, exec; /* the blocks below, in this order */
};

/*
 * The head: the architecture and the calls denied to anyone; PROT_EXEC
 * calls to the exec block, rt_sigaction to the signal block, madvise's
 * flags, shmat's SHM_EXEC, personality's READ_IMPLIES_EXEC; then calls
 * from mpkit's site allowed, and anyone else's sorted: key calls denied,
 * calls on a range to the range block (mremap through the mremap block,
 * madvise through the advise block).  The blocks are far (past every
 * range check): the head reaches them through jumps of its own (ja),
 * placed after its two returns.
 */
static void head(struct prog *p, const struct blocks *b, const struct sites *s, unsigned flags)
{
	static const uint32_t opens[] = { SYS_open, SYS_creat, SYS_openat, 437 /* openat2 */,
					  SYS_open_by_handle_at };
	static const uint32_t keys[] = { SYS_process_vm_readv, SYS_pkey_alloc, SYS_pkey_free,
					 SYS_pkey_mprotect };
	static const uint32_t key_moves[] = { SYS_pkey_alloc, SYS_pkey_free };
	static const uint32_t exec[] = { SYS_mmap, SYS_mprotect, SYS_pkey_mprotect };
	static const uint32_t ranged[] = { SYS_mprotect, SYS_munmap };
	static const uint32_t always[] = {
		SYS_process_vm_writev, SYS_ptrace, 425 /* io_uring_setup */,
		426 /* io_uring_enter */, 427 /* io_uring_register */, 440 /* process_madvise */,
		SYS_remap_file_pages, SYS_userfaultfd, SYS_perf_event_open,
	};
	int l_exec = label(p), l_adv = label(p), l_ip = label(p), l_untrusted = label(p),
	    l_mmap = label(p), l_mremap = label(p), l_shmat = label(p), l_exec_far = label(p),
	    l_sig_far = label(p), l_shm_exec = label(p), l_pers = label(p), l_range_far = label(p),
	    l_adv_far = label(p);

	ld(p, OFF_ARCH);
	jump(p, BPF_JEQ, AUDIT_ARCH_X86_64, NEXT, b->deny);
	ld(p, OFF_NR);
	jump(p, BPF_JGE, X32_BIT, b->deny, NEXT);
	jump_each(p, always, N(always), b->deny);
	if (flags & MPK_LOCK_NO_OPEN)
		jump_each(p, opens, N(opens), b->deny);
	if (flags & MPK_LOCK_FREEZE_KEYS)
		jump_each(p, key_moves, N(key_moves), b->deny);
	jump_each(p, exec, N(exec), l_exec);
	jump(p, BPF_JEQ, SYS_rt_sigaction, l_sig_far, NEXT);
	jump(p, BPF_JEQ, SYS_shmat, l_shm_exec, NEXT);
	jump(p, BPF_JEQ, SYS_personality, l_pers, NEXT);
	jump(p, BPF_JEQ, SYS_madvise, l_adv, l_ip);
	arg_flags(p, l_exec, 2, PROT_EXEC, l_exec_far, l_ip);
	arg_flags(p, l_shm_exec, 2, SHM_EXEC_FLAG, b->deny, l_ip);
	place(p, l_pers);
	ld(p, OFF_ARG(0));
	jump(p, BPF_JEQ, 0xffffffffu, l_ip, NEXT);
	jump(p, BPF_JSET, READ_IMPLIES_EXEC_FLAG, b->deny, l_ip);
	place(p, l_adv);
	ld(p, OFF_ARG(2));
	jump(p, BPF_JEQ, MADV_DODUMP, b->deny, NEXT);
	jump(p, BPF_JEQ, MADV_KEEPONFORK, b->deny, l_ip);
	from_sites(p, l_ip, s, b->allow, l_untrusted);
	place(p, l_untrusted);
	ld(p, OFF_NR);
	jump_each(p, keys, N(keys), b->deny);
	jump_each(p, ranged, N(ranged), l_range_far);
	jump(p, BPF_JEQ, SYS_madvise, l_adv_far, NEXT);
	jump(p, BPF_JEQ, SYS_mmap, l_mmap, NEXT);
	jump(p, BPF_JEQ, SYS_mremap, l_mremap, NEXT);
	jump(p, BPF_JEQ, SYS_shmat, l_shmat, b->allow);
	arg_flags(p, l_mmap, 3, MAP_FIXED | MAP_FIXED_NOREPLACE, l_range_far, b->allow);
	arg_flags(p, l_mremap, 3, MREMAP_FIXED_FLAG, b->deny, b->mremap);
	arg_flags(p, l_shmat, 2, SHM_REMAP_FLAG, b->deny, b->allow);
	place(p, b->deny);
	ret(p, p->deny);
	place(p, b->allow);
	ret(p, SECCOMP_RET_ALLOW);
	place(p, l_exec_far);
	ja(p, b->exec); /* past the range checks */
	place(p, l_sig_far);
	ja(p, b->sig);
	place(p, l_range_far);
	ja(p, b->range);
	place(p, l_adv_far);
	ja(p, b->advise);
}

/*
 * At here (just after the head), anyone else's mremap: denied when its
 * address lies in executable memory of lockdown time (the kernel takes
 * the old range from the one mapping at that address), else on to the
 * range block.  Two instructions a range, the ranges in address order:
 * each run of at most 100 sharing the address's high word compares the
 * high word once, then the low word against each range's last byte and
 * first; pieces of a range that crosses a high word are ranges of their
 * own.
 */
static void mremap_block(struct prog *p, int here, const struct mpk_exec_ranges *ex, int range)
{
	uint64_t chunk_hi = 0;
	int in_chunk = 0, l_end = 0, l_deny = 0;

	place(p, here);
	for (size_t i = 0; ex && i < ex->nx; i++) {
		for (uint64_t lo = ex->x[i].lo, hi; lo < ex->x[i].hi; lo = hi) {
			uint64_t h = lo >> 32;
			hi = h == 0xffffffffu || ex->x[i].hi - 1 < ((h + 1) << 32) ? ex->x[i].hi : (h + 1) << 32;
			if (in_chunk && (h != chunk_hi || in_chunk == 100)) {
				ja(p, l_end);
				place(p, l_deny);
				ret(p, p->deny);
				place(p, l_end);
				in_chunk = 0;
			}
			if (!in_chunk) {
				l_end = label(p);
				l_deny = label(p);
				chunk_hi = h;
				ld(p, OFF_ARG(0) + 4);
				jump(p, BPF_JEQ, (uint32_t)h, NEXT, l_end);
				ld(p, OFF_ARG(0));
			}
			int l_next = label(p);
			jump(p, BPF_JGT, (uint32_t)(hi - 1), l_next, NEXT);
			jump(p, BPF_JGE, (uint32_t)lo, l_deny, l_end);
			place(p, l_next);
			in_chunk++;
		}
	}
	if (in_chunk) {
		ja(p, l_end);
		place(p, l_deny);
		ret(p, p->deny);
		place(p, l_end);
	}
	ja(p, range);
}

/* At here (just before the range block), anyone else's madvise: denied
 * when [arg0, arg0 + arg1) touches code copied out of a writable file
 * (MADV_DONTNEED would bring the file's pages back), else on to the range
 * block. */
static void advise_block(struct prog *p, int here, const struct mpk_exec_ranges *ex)
{
	place(p, here);
	if (!ex || !ex->ncopied)
		return;
	load_range(p);
	for (size_t i = 0; i < ex->ncopied; i++)
		check_range(p, ex->copied[i].lo, ex->copied[i].hi, p->deny);
}

/* At here, anyone else's mprotect, munmap, madvise, mremap or mmap with
 * MAP_FIXED(_NOREPLACE): denied if [arg0, arg0 + arg1) touches a domain
 * range or the gate code, else allowed. */
static void range_block(struct prog *p, int here, const struct mpk_range *r, size_t nr,
			const struct mpk_range *gate, size_t ngate)
{
	place(p, here);
	load_range(p);
	for (size_t i = 0; i < nr; i++)
		check_range(p, r[i].lo, r[i].hi, p->deny);
	for (size_t i = 0; i < ngate; i++)
		check_range(p, gate[i].lo, gate[i].hi, p->deny);
	ret(p, SECCOMP_RET_ALLOW);
}

/* At here, rt_sigaction: a new action for a frozen signal from mpkit's
 * site only; a query, or another signal, allowed. */
static void sig_block(struct prog *p, int here, const struct sites *s)
{
	static const uint32_t frozen[] = MPK_OS_FROZEN_SIGNALS;
	int l_frozen = label(p), l_act = label(p), l_allow = label(p), l_deny = label(p);

	place(p, here);
	ld(p, OFF_ARG(0));
	jump_each(p, frozen, N(frozen), l_frozen);
	ret(p, SECCOMP_RET_ALLOW);
	place(p, l_frozen);
	ld(p, OFF_ARG(1));
	jump(p, BPF_JEQ, 0, NEXT, l_act);
	ld(p, OFF_ARG(1) + 4);
	jump(p, BPF_JEQ, 0, l_allow, l_act); /* no new action: a query */
	from_sites(p, l_act, s, l_allow, l_deny);
	place(p, l_deny);
	ret(p, p->deny);
	place(p, l_allow);
	ret(p, SECCOMP_RET_ALLOW);
}

/* At here, PROT_EXEC in mmap, mprotect or pkey_mprotect: allowed from
 * mpkit's site on a range inside domain memory (mmap: MAP_FIXED), else
 * denied.  The checks' own denial comes before the range checks: a
 * conditional jump reaches 255 instructions at most, the length of 22 of
 * them. */
static void exec_block(struct prog *p, int here, const struct mpk_range *r, size_t nr,
		       const struct sites *s)
{
	int l_in = label(p), l_mmap = label(p), l_range = label(p), l_deny = label(p);

	from_sites(p, here, s, l_in, l_deny);
	place(p, l_in);
	ld(p, OFF_NR);
	jump(p, BPF_JEQ, SYS_mmap, l_mmap, l_range);
	arg_flags(p, l_mmap, 3, MAP_FIXED | MAP_FIXED_NOREPLACE, l_range, l_deny);
	place(p, l_deny);
	ret(p, p->deny);
	place(p, l_range);
	load_range(p);
	for (size_t i = 0; i < nr; i++)
		check_inside(p, r[i].lo, r[i].hi);
	ret(p, p->deny); /* inside none */
}

int mpk__bpf_build(struct sock_filter *out, size_t *len, const struct mpk_range *r, size_t nr,
		   const struct mpk_range *gate, size_t ngate, const struct mpk_exec_ranges *ex,
		   const uintptr_t *trusted, size_t ntrusted, unsigned flags)
{
	struct prog *p = mpk__ialloc(sizeof(*p));
	struct sites s = { trusted, ntrusted };

	if (!p)
		return -1;
	p->deny = flags & MPK_LOCK_ERRNO ? SECCOMP_RET_ERRNO | EPERM : SECCOMP_RET_KILL_PROCESS;
	struct blocks b = { label(p), label(p), label(p), label(p), label(p), label(p), label(p) };
	head(p, &b, &s, flags);
	mremap_block(p, b.mremap, ex, b.range);
	advise_block(p, b.advise, ex);
	range_block(p, b.range, r, nr, gate, ngate);
	sig_block(p, b.sig, &s);
	exec_block(p, b.exec, r, nr, &s);
	return finish(p, out, len);
}

int mpk__bpf_build_range(struct sock_filter *out, size_t *len, uintptr_t lo, uintptr_t hi,
			 uintptr_t trusted_ip, unsigned flags)
{
	static const uint32_t ranged[] = { SYS_mprotect, SYS_munmap, SYS_madvise, SYS_mremap };
	struct prog *p = mpk__ialloc(sizeof(*p));

	if (!p)
		return -1;
	p->deny = flags & MPK_LOCK_ERRNO ? SECCOMP_RET_ERRNO | EPERM : SECCOMP_RET_KILL_PROCESS;
	int l_ip = label(p), l_mmap = label(p), l_range = label(p), l_allow = label(p);

	ld(p, OFF_NR);
	jump_each(p, ranged, N(ranged), l_ip);
	jump(p, BPF_JEQ, SYS_mmap, l_mmap, l_allow);
	arg_flags(p, l_mmap, 3, MAP_FIXED | MAP_FIXED_NOREPLACE, l_ip, l_allow);
	from_ip(p, l_ip, trusted_ip, l_allow, l_range);
	place(p, l_range);
	load_range(p);
	check_range(p, lo, hi, p->deny);
	place(p, l_allow);
	ret(p, SECCOMP_RET_ALLOW);
	return finish(p, out, len);
}
