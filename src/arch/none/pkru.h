/* SPDX-License-Identifier: MIT */
/* Architectures without protection keys: only the soft backend runs. */
#ifndef MPK_ARCH_NONE_PKRU_H
#define MPK_ARCH_NONE_PKRU_H

#include <stdbool.h>
#include <stdint.h>

typedef uint32_t mpk_reg_t;

#define MPK_ARCH_NKEYS 0
#define MPK_ARCH_REG_DEFAULT 0u

static inline mpk_reg_t mpk_arch_reg_read(void) { return 0; }
static inline void mpk_arch_reg_write(mpk_reg_t reg) { (void)reg; }
static inline mpk_reg_t mpk_arch_reg_update(mpk_reg_t mask, mpk_reg_t bits) { (void)mask; (void)bits; return 0; }
struct mpk_arch_pub {
	uint32_t busy, and_, or_;
};
static inline bool mpk_arch_fast_set(const uint64_t *e, struct mpk_arch_pub *p) { (void)e; (void)p; return false; }
static inline bool mpk_arch_fast_enter(const uint64_t *e, struct mpk_arch_pub *p, mpk_reg_t *old, uint32_t *keep) { (void)e; (void)p; *old = 0; *keep = 0; return false; }
static inline uint64_t mpk_arch_fast_word(int key, int rights) { (void)key; (void)rights; return 0; }
static inline int mpk_arch_keep_rights(mpk_reg_t old, uint32_t keep) { (void)old; (void)keep; return 3; }
static inline bool mpk_arch_rights_match(mpk_reg_t a, mpk_reg_t o, mpk_reg_t m, mpk_reg_t s) { (void)a; (void)o; (void)m; (void)s; return false; }
static inline bool mpk_arch_same_rights(mpk_reg_t a, mpk_reg_t o, int key, int *rights) { (void)a; (void)o; (void)key; *rights = 3; return true; }
static inline mpk_reg_t mpk_arch_key_bits(int key, int rights) { (void)key; (void)rights; return 0; }
static inline mpk_reg_t mpk_arch_key_mask(int key) { (void)key; return 0; }
static inline int mpk_arch_key_rights(mpk_reg_t reg, int key) { (void)reg; (void)key; return 3; }

#endif
