/* SPDX-License-Identifier: MIT */
/* Architectures without protection keys: only the soft backend runs. */
#ifndef MPK_ARCH_NONE_PKRU_H
#define MPK_ARCH_NONE_PKRU_H

#include <stdint.h>

typedef uint32_t mpk_reg_t;

#define MPK_ARCH_NKEYS 0
#define MPK_ARCH_REG_DEFAULT 0u

static inline mpk_reg_t mpk_arch_reg_read(void) { return 0; }
static inline void mpk_arch_reg_write(mpk_reg_t reg) { (void)reg; }
static inline mpk_reg_t mpk_arch_reg_update(mpk_reg_t mask, mpk_reg_t bits) { (void)mask; (void)bits; return 0; }
static inline int mpk_arch_key_update(const int *keyp, int rights, mpk_reg_t *old) { (void)keyp; (void)rights; *old = 0; return -1; }
static inline mpk_reg_t mpk_arch_key_bits(int key, int rights) { (void)key; (void)rights; return 0; }
static inline mpk_reg_t mpk_arch_key_mask(int key) { (void)key; return 0; }
static inline int mpk_arch_key_rights(mpk_reg_t reg, int key) { (void)reg; (void)key; return 3; }

#endif
