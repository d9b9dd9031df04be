/* SPDX-License-Identifier: MIT */
/*
 * mpkit bench malloc's "large": blocks above 128 KiB (where glibc maps
 * them on their own) and buffers grown by realloc.  Each round grows
 * four buffers from 1 KiB to 4 MiB by half again, appending as a reader
 * of unknown-length input does, and makes and frees eight blocks of 128
 * KiB to 2 MiB, touching every page.  The sum is of bytes read back.
 */
#include "mw.h"

#define BUFS 4
#define BIGS 8

int main(int argc, char **argv)
{
	long rounds = mw_amount(argc, argv, 100, 4);
	uint64_t s = 0xa54ff53a5f1d36f1ull, sum = 0;

	for (long r = 0; r < rounds; r++) {
		unsigned char *buf[BUFS] = { 0 }, *big[BIGS];
		size_t len[BUFS] = { 0 }, cap[BUFS] = { 0 }, bn[BIGS];
		for (int grown = 1; grown;) {
			grown = 0;
			for (int b = 0; b < BUFS; b++) {
				if (cap[b] >= (size_t)4 << 20)
					continue;
				size_t want = cap[b] ? cap[b] + cap[b] / 2 : 1024;
				unsigned char *p = realloc(buf[b], want);
				if (!p) {
					fprintf(stderr, "out of memory: realloc(%zu)\n", want);
					return 1;
				}
				if (len[b] && p[len[b] - 1] != (unsigned char)(len[b] - 1 + b)) {
					fprintf(stderr, "realloc lost a buffer's contents\n");
					return 1;
				}
				/* every 64th byte of the new part written: the
				 * 4096th ones read back are among them */
				for (size_t o = (len[b] + 63) & ~(size_t)63; o < want; o += 64)
					p[o] = (unsigned char)(o + b);
				len[b] = want;
				p[want - 1] = (unsigned char)(want - 1 + b);
				buf[b] = p, cap[b] = want, grown = 1;
			}
		}
		for (int k = 0; k < BIGS; k++) {
			bn[k] = mw_size(&s, (size_t)128 << 10, (size_t)2 << 20);
			big[k] = mw_alloc(bn[k]);
			for (size_t o = 16; o < bn[k]; o += 4096)
				big[k][o] = (unsigned char)(o >> 12);
			mw_stamp(big[k], bn[k], mw_rnd(&s));
		}
		for (int k = 0; k < BIGS; k++) {
			for (size_t o = 16 + 4096; o + 1 < bn[k]; o += 4096)
				sum += big[k][o];
			sum += mw_check(big[k], bn[k]) >> 32;
			free(big[k]);
		}
		for (int b = 0; b < BUFS; b++) {
			for (size_t o = 0; o + 1 < len[b]; o += 4096)
				sum += buf[b][o];
			free(buf[b]);
		}
	}
	printf("large: %ld rounds, sum %016llx\n", rounds, (unsigned long long)sum);
	return 0;
}
