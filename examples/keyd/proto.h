/* SPDX-License-Identifier: MIT */
/*
 * keyd's wire format, shared by the daemon and its clients.
 *
 * Request: op (1 byte), length (2 bytes, big endian), payload.
 * Reply:   status (1 byte, 0 = ok), length (4 bytes, big endian), data.
 *
 *   'P'  -              -> the public signing key (32 bytes)
 *   'S'  message        -> its Ed25519 signature (64 bytes)
 *   'X'  message        -> nonce (24) + crypto_secretbox of it
 *   'E'  N (2 bytes), data  -> N bytes echoed back ("heartbeat")
 *   'D'  how (1), address (8, big endian), N (2) -> N bytes read there
 *
 * 'E' is the Heartbleed bug on purpose: the daemon believes N, not the
 * length of the data it got.  'D' is a second one, a "debug peek" left in:
 * the daemon reads N bytes at an address the client names, with the system
 * call the client picks (how: 'v' process_vm_readv on itself, 'm' pread of
 * /proc/self/mem, 'k' pkey_mprotect to key 0 then a copy, 'p' mprotect
 * then a copy), a confused deputy for an attacker who found a way to make
 * the daemon's code make system calls.  A failed call is answered with
 * status 1 and its errno (4 bytes).
 */
#ifndef KEYD_PROTO_H
#define KEYD_PROTO_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <sodium.h>

#define KEYD_MAX_PAYLOAD 1000    /* a request's payload fits a pool slot */
#define KEYD_MAX_REPLY   (65535 + 64)
#define KEYD_DEBUG_MAX   4096    /* 'D' reads at most this much */
#define KEYD_DEBUG_HOWS  "vmpk" /* p before k: k re-keys the pages */

/* The long-term keys, derived from a 32-byte seed. */
struct keyd_keys {
	unsigned char sign_sk[64]; /* libsodium: seed || public key */
	unsigned char box_key[32]; /* generichash(seed, "keyd-box") */
};

/* Fill *k from seed; both the daemon and a client sharing the box key
 * (the load test's) call this. */
static inline void keyd_derive(const unsigned char seed[32], struct keyd_keys *k)
{
	unsigned char pk[32];

	crypto_sign_seed_keypair(pk, k->sign_sk, seed);
	crypto_generichash(k->box_key, sizeof(k->box_key), seed, 32,
			   (const unsigned char *)"keyd-box", 8);
}

static inline int keyd_io(int fd, void *buf, size_t n, int wr)
{
	unsigned char *p = buf;

	while (n) {
		ssize_t k = wr ? write(fd, p, n) : read(fd, p, n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

static inline void keyd_put16(unsigned char *p, unsigned v)
{
	p[0] = (unsigned char)(v >> 8);
	p[1] = (unsigned char)v;
}

static inline unsigned keyd_get16(const unsigned char *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

static inline void keyd_put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (24 - 8 * i));
}

static inline uint32_t keyd_get32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

#endif
