/* SPDX-License-Identifier: MIT */
/* Architectures without protection keys. */
#include <string.h>

#include "../../arch.h"

void mpk_arch_caps(struct mpk_arch_caps *caps) { memset(caps, 0, sizeof(*caps)); }
bool mpk_arch_frame_reg_get(void *uc, mpk_reg_t *reg) { (void)uc; (void)reg; return false; }
bool mpk_arch_frame_reg_set(void *uc, mpk_reg_t reg) { (void)uc; (void)reg; return false; }
bool mpk_arch_fault_is_write(const void *uc) { (void)uc; return false; }
void mpk_arch_frame_restart(void *uc) { (void)uc; }
int mpk_arch_frame_chain(void *uc, void **frames, int max) { (void)max; frames[0] = uc; return 1; }
int mpk_arch_self_frames(int sig, void **frames, int max) { (void)sig; (void)frames; (void)max; return 0; }
