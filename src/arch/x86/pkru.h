/* SPDX-License-Identifier: MIT */
/* x86-64 PKRU: two bits per key, AD (access disable) and WD (write disable). */
#ifndef MPK_ARCH_X86_PKRU_H
#define MPK_ARCH_X86_PKRU_H

#include <stdbool.h>
#include <stdint.h>

typedef uint32_t mpk_reg_t;

#define MPK_ARCH_NKEYS 16
/* The kernel's value for new signal handlers: every key but 0 disabled. */
#define MPK_ARCH_REG_DEFAULT 0x55555554u

/* RDPKRU: ECX must be 0; EDX is clobbered.  Reading changes nothing, so
 * no memory clobber; volatile keeps it ordered against WRPKRU. */
static inline mpk_reg_t mpk_arch_reg_read(void)
{
	uint32_t eax, edx;
	__asm__ volatile(".byte 0x0f,0x01,0xee" /* rdpkru */
			 : "=a"(eax), "=d"(edx)
			 : "c"(0));
	return eax;
}

/*
 * Every WRPKRU of mpkit is a checked site (ERIM's call-gate check): the
 * value the library meant to write is kept in a second register, and right
 * after the write EAX (what went into PKRU) is compared with it; on a
 * mismatch mpk_arch_wrpkru_fail kills the process before a single further
 * instruction of the caller runs.  So jumping onto an mpkit WRPKRU with a
 * chosen EAX gains nothing.  EAX is compared rather than a fresh RDPKRU: a
 * broadcast may legitimately edit PKRU between the two.  Each site is also
 * listed, as a self-relative offset resolved at link time, in the section
 * mpk_wrpkru_sites, which the gadget scan (scan.c) reads to mark them.
 * "2:" must label the WRPKRU and EXPECT name the register holding the value.
 */
#define MPK_ARCH_WRPKRU_CHECKED(expect)                                  \
	"2:\t.byte 0x0f,0x01,0xef\n\t" /* wrpkru */                       \
	"cmpl " expect ", %%eax\n\t"                                      \
	"jne mpk_arch_wrpkru_fail\n\t"                                    \
	".pushsection mpk_wrpkru_sites, \"a\"\n\t"                        \
	".balign 4\n\t"                                                   \
	".long 2b - .\n\t"                                                \
	".popsection\n"

/* WRPKRU: ECX = EDX = 0.  The "memory" clobber keeps the compiler from
 * moving domain-memory accesses across a rights change. */
static inline void mpk_arch_reg_write(mpk_reg_t reg)
{
	uint32_t want;

	/* The copy is made inside the asm (an early-clobber output): given
	 * the same value as an input, the compiler would pick EAX itself. */
	__asm__ volatile("movl %%eax, %[want]\n"
			 MPK_ARCH_WRPKRU_CHECKED("%[want]")
			 : [want] "=&r"(want)
			 : "a"(reg), "c"(0), "d"(0)
			 : "memory", "cc");
}

/*
 * PKRU = (PKRU & ~mask) | bits; returns the PKRU it read.  Restartable:
 * another thread revokes keys by editing the PKRU image in this thread's
 * signal frame (broadcast.c), and a signal landing between the RDPKRU and
 * the WRPKRU here would see its edit overwritten by a value computed from
 * the old PKRU.  Each copy records [start, WRPKRU] in the mpk_restart
 * section; mpk_arch_frame_restart() sends a thread interrupted in that range
 * back to the start, to read PKRU again.  Inputs stay in registers the
 * sequence does not write, so restarting is safe.
 */
static inline mpk_reg_t mpk_arch_reg_update(mpk_reg_t mask, mpk_reg_t bits)
{
	uint32_t old, want, eax, ecx, edx;

	__asm__ volatile("1:\txorl %%ecx, %%ecx\n\t"
			 ".byte 0x0f,0x01,0xee\n\t" /* rdpkru: EDX = 0 */
			 "movl %%eax, %[old]\n\t"
			 "andl %[keep], %%eax\n\t"
			 "orl %[bits], %%eax\n\t"
			 "cmpl %[old], %%eax\n\t" /* WRPKRU costs more */
			 "je 3f\n\t"
			 "movl %%eax, %[want]\n"
			 MPK_ARCH_WRPKRU_CHECKED("%[want]")
			 "3:\n\t"
			 ".pushsection mpk_restart, \"aw\"\n\t"
			 ".balign 8\n\t"
			 ".quad 1b, 2b\n\t"
			 ".popsection"
			 : [old] "=&r"(old), [want] "=&r"(want), "=&a"(eax), "=&c"(ecx), "=&d"(edx)
			 : [keep] "r"(~mask), [bits] "r"(bits)
			 : "memory", "cc");
	return old;
}

/*
 * What a thread publishes of its PKRU for broadcasts (broadcast.c), in its
 * registry entry: busy while a rights change runs (set before the key is
 * loaded, cleared once the value written is noted), and the AND and the OR
 * of every value the thread may hold, in its own code or in a signal
 * frame, since a broadcast last set them.  Every value v then has
 * and_ <= v <= or_ bitwise, which is all a broadcaster needs to know that
 * a thread already holds the target rights.  Written by the thread (and
 * its signal handlers) only; read by a broadcaster after membarrier().
 */
struct mpk_arch_pub {
	uint32_t busy, and_, or_;
};

/*
 * The fast path's rights change (rights.c), from one word the domain
 * publishes per rights value: *entry = keep | bits << 32, where keep is
 * ~mask(key) and bits the key's two bits for those rights, or 0 while the
 * domain has no key (and for rights that are not valid).  Then
 * PKRU = (PKRU & keep) | bits, the value noted in *pub; false, without
 * touching PKRU, when the word is 0.  Restartable like mpk_arch_reg_update():
 * a thread rewound by a broadcast loads the word again, so once a domain's
 * words are unpublished (0) and a broadcast has reached every thread that
 * is busy or holds the key open, no thread can still write bits for it on
 * behalf of that domain.  pub->busy covers the load: a broadcaster that
 * sees it clear after its membarrier() knows the thread either noted its
 * write already or will load the word afresh.  No compare before the
 * WRPKRU (a WRPKRU that changes nothing is cheaper than the branch), and the
 * way out for a keyless domain is out of line (.text.unlikely).
 */
#define MPK_ARCH_FAST_BODY(save)                                             \
	"movl $1, %[busy]\n"                                                 \
	"1:\tmovq %[e], %[w]\n\t"                                            \
	"testq %[w], %[w]\n\t"                                               \
	"jz 3f\n\t"                                                          \
	"xorl %%ecx, %%ecx\n\t"                                              \
	".byte 0x0f,0x01,0xee\n\t" /* rdpkru: EDX = 0 */                     \
	save                                                                 \
	"andl %k[w], %%eax\n\t"                                              \
	"shrq $32, %[w]\n\t"                                                 \
	"orl %k[w], %%eax\n\t"                                               \
	"movl %%eax, %k[w]\n" /* the value meant, for the check */            \
	MPK_ARCH_WRPKRU_CHECKED("%k[w]")                                     \
	"andl %%eax, %[and]\n\t"                                             \
	"orl %%eax, %[or]\n\t"                                               \
	"movl $0, %[busy]\n\t"                                               \
	".pushsection .text.unlikely, \"ax\"\n"                              \
	"3:\tmovl $0, %[busy]\n\t"                                           \
	"jmp %l[none]\n\t"                                                   \
	".popsection\n\t"                                                    \
	".pushsection mpk_restart, \"aw\"\n\t"                              \
	".balign 8\n\t"                                                      \
	".quad 1b, 2b\n\t"                                                   \
	".popsection"

/* The operands both copies share.  entry is a memory operand: the
 * registers that address it are inputs, which the sequence never writes,
 * so a restart finds them intact. */
#define MPK_ARCH_FAST_OPERANDS(entry, pub)                                    \
	[w] "=&r"(w), "=&a"(eax), "=&c"(ecx), "=&d"(edx), [busy] "+m"((pub)->busy), \
		[and] "+m"((pub)->and_), [or] "+m"((pub)->or_)                 \
	: [e] "m"(*(entry)) : "memory", "cc" : none

static inline __attribute__((always_inline)) bool mpk_arch_fast_set(const uint64_t *entry,
								    struct mpk_arch_pub *pub)
{
	uint64_t w;
	uint32_t eax, ecx, edx;

	__asm__ goto(MPK_ARCH_FAST_BODY("") : MPK_ARCH_FAST_OPERANDS(entry, pub));
	return true;
none:
	return false;
}

/* The same, also giving the PKRU read (*old) and the keep word used. */
static inline __attribute__((always_inline)) bool
mpk_arch_fast_enter(const uint64_t *entry, struct mpk_arch_pub *pub, mpk_reg_t *old, uint32_t *keep)
{
	uint64_t w;
	uint32_t o, m, eax, ecx, edx;

	__asm__ goto(MPK_ARCH_FAST_BODY("movl %%eax, %[o]\n\tmovl %k[w], %[m]\n\t")
		     : [o] "=&r"(o), [m] "=&r"(m), MPK_ARCH_FAST_OPERANDS(entry, pub));
	*old = o;
	*keep = m;
	return true;
none:
	return false;
}

/* The word *entry above for key (-1: none) and rights. */
static inline uint64_t mpk_arch_fast_word(int key, int rights)
{
	if (key < 0)
		return 0;
	return (uint64_t)((mpk_reg_t)(~rights & 3) << (2 * key)) << 32 |
	       (uint32_t) ~((mpk_reg_t)3 << (2 * key));
}

/* The rights *old gave the key whose keep word is keep. */
static inline int mpk_arch_keep_rights(mpk_reg_t old, uint32_t keep)
{
	static const signed char of_bits[4] = { 3, 0, 1, 0 }; /* AD, WD */
	return of_bits[(old >> __builtin_ctz(~keep)) & 3];
}

/*
 * Whether every register value v with and_ <= v <= or_ (bitwise) gives
 * each key in mask the rights that set gives it: AD set in every value
 * where set closes the key, exactly set's bits elsewhere.
 */
static inline bool mpk_arch_rights_match(mpk_reg_t and_, mpk_reg_t or_, mpk_reg_t mask, mpk_reg_t set)
{
	mpk_reg_t none = set & mask & 0x55555555u; /* AD bits of keys closed */
	mpk_reg_t open = mask & ~(none | none << 1);
	return (and_ & none) == none && !((and_ ^ set) & open) && !((or_ ^ set) & open);
}

/* Whether every value between and_ and or_ gives key the same rights
 * (then in *rights): AD in all, or in none with WD alike. */
static inline bool mpk_arch_same_rights(mpk_reg_t and_, mpk_reg_t or_, int key, int *rights)
{
	unsigned a = (and_ >> (2 * key)) & 3, o = (or_ >> (2 * key)) & 3;

	*rights = (a & 1) ? 0 : (a & 2) ? 1 : 3;
	return (a & 1) || (!(o & 1) && (a & 2) == (o & 2));
}

/* mpkit rights (NONE 0, READ 1, RW 3) to the two PKRU bits and back:
 * NONE -> AD|WD, READ -> WD, RW -> 0.  Branch-free for the fast path. */
static inline mpk_reg_t mpk_arch_key_bits(int key, int rights)
{
	return (mpk_reg_t)(~rights & 3) << (2 * key);
}

static inline mpk_reg_t mpk_arch_key_mask(int key)
{
	return (mpk_reg_t)3 << (2 * key);
}

static inline int mpk_arch_key_rights(mpk_reg_t reg, int key)
{
	unsigned bits = (reg >> (2 * key)) & 3;
	if (bits & 1)
		return 0; /* AD: no access */
	return (bits & 2) ? 1 : 3;
}

#endif
